"""The media pool: OCR and ASR in their own processes, admitted by work, so a flood of them cannot slow text.

Interface (shared by the image and speech routes):

    pool = MediaPool(config: MediaConfig, clock: Clock, metrics: Metrics, level: Callable[[], int])
    await pool.run("ocr" | "asr", units, fn, *args)  # units: megapixels (ocr) or audio seconds (asr)
    await pool.run(..., wait=True)                     # an async job's: waits for room instead of a 503
    pool.allows("overlay" | "stream")                  # False at or above the feature's ladder level
    pool.spawn(work, name)                             # an async job's recognition, cancelled by close
    await pool.close()

`run` calls the picklable `fn(*args)` in a process of the kind's own pool (spawned, at `nice` lower OS
priority, one OpenMP thread, `*_concurrency` at a time). Units waiting or running per kind are capped
(`max_queued_*`): past the cap it raises `Overloaded` (503 + Retry-After, estimated from the recent seconds
per unit). A cancelled caller keeps its slot and units until its process is done with the work. A crashed
worker raises `EngineCrashed` and the next call starts a fresh pool. `allows` counts each refusal. Metrics:
`peakgate_media_*` (`Metrics.media_*`: one set per registry, shared by every app's pool), labelled by kind.

Where it lives: `api.app.create_app` builds one per app from `settings.media`, the service's metrics and the
ladder's level (`ladder_level`, read from the `peakgate_degradation_level` gauge: the service keeps its guard
private), and closes it when the app's lifespan ends. Processes start on first use, not at build.
"""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
from collections.abc import AsyncIterator, Callable, Coroutine
from concurrent.futures import Executor, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

from starlette.applications import Starlette
from starlette.types import Lifespan

from peakgate.clock import Clock
from peakgate.errors import EngineCrashed, Overloaded
from peakgate.media.settings import MediaConfig
from peakgate.observe.metrics import Metrics

T = TypeVar("T")
Kind = Literal["ocr", "asr"]
Feature = Literal["overlay", "stream"]

_UNIT = {"ocr": "megapixels", "asr": "audio seconds"}
_EWMA_WEIGHT = 0.3  # of the newest run in the seconds-per-unit estimate behind Retry-After
_MIN_RETRY_AFTER_S = 1.0


def ladder_level(metrics: Metrics) -> Callable[[], int]:
    """The degradation ladder's current level, as the guard last published it (Collector.collect is public)."""

    def level() -> int:
        for family in metrics.degradation_level.collect():
            for sample in family.samples:
                return int(sample.value)
        return 0

    return level


def _lower_priority(increment: int) -> None:
    """Runs in each pool process as it starts, before any engine loads."""
    os.nice(increment)
    # One thread per process: `*_concurrency` is then the CPU the pool may take (tesseract's OpenMP would
    # otherwise spread one image over every core, beside the text engines).
    os.environ.setdefault("OMP_THREAD_LIMIT", "1")


@dataclass
class _Lane:
    """One kind's share of the pool: its processes, its slots and the units it holds."""

    concurrency: int
    max_units: float
    slots: asyncio.Semaphore
    units: float = 0.0
    tasks: int = 0  # waiting or running
    seconds_per_unit: float = 1.0  # a guess until the first run
    executor: Executor | None = field(default=None)


class MediaPool:
    def __init__(self, config: MediaConfig, clock: Clock, metrics: Metrics, level: Callable[[], int], *,
                 executor: Callable[[int], Executor] | None = None) -> None:
        """`executor(concurrency)` builds a kind's executor (tests: threads); default the niced process pool."""
        self._config = config
        self._executor = executor or self._processes
        self._clock = clock
        self._level = level
        self._metrics = metrics
        self._lanes: dict[Kind, _Lane] = {
            "ocr": _Lane(config.ocr_concurrency, config.max_queued_megapixels,
                         asyncio.Semaphore(config.ocr_concurrency)),
            "asr": _Lane(config.asr_concurrency, config.max_queued_audio_s,
                         asyncio.Semaphore(config.asr_concurrency)),
        }
        self._background: set[asyncio.Task[None]] = set()

    async def run(self, kind: Kind, units: float, fn: Callable[..., T], *args: object, wait: bool = False) -> T:
        """`wait`: an async job's work waits for room in the lane (polling at the backlog's estimated drain time)
        instead of refusing; it holds no units while it waits, so requests with a client waiting go first."""
        lane = self._lanes[kind]
        while wait and not self._fits(lane, units):
            await self._clock.sleep(self._backlog_s(lane))
        self._admit(kind, lane, units)
        lane.units += units
        lane.tasks += 1
        # inc/dec, not set: every app's pool over one service's metrics counts into the same gauge.
        self._metrics.media_queued.labels(kind).inc(units)
        try:
            async with lane.slots:
                return await self._execute(kind, lane, units, fn, args)
        finally:
            lane.tasks -= 1
            lane.units = lane.units - units if lane.tasks else 0.0  # no float residue once idle
            self._metrics.media_queued.labels(kind).dec(units)

    @staticmethod
    def _fits(lane: _Lane, units: float) -> bool:
        # An idle lane takes any one task (the file caps bound it); a busy one only what fits under its cap.
        return lane.tasks == 0 or lane.units + units <= lane.max_units

    @staticmethod
    def _backlog_s(lane: _Lane) -> float:
        return max(_MIN_RETRY_AFTER_S, round(lane.units * lane.seconds_per_unit / lane.concurrency, 1))

    def _admit(self, kind: Kind, lane: _Lane, units: float) -> None:
        if self._fits(lane, units):
            return
        self._metrics.media_refused.labels(kind, "queue_full").inc()
        raise Overloaded(f"the {kind} queue is full ({lane.units:.1f} of {lane.max_units:.1f} {_UNIT[kind]} "
                         f"waiting or running); retry later", retry_after_s=self._backlog_s(lane))

    async def _execute(self, kind: Kind, lane: _Lane, units: float, fn: Callable[..., T], args: tuple[object, ...]
                       ) -> T:
        if lane.executor is None:
            lane.executor = self._executor(lane.concurrency)
        executor = lane.executor
        self._metrics.media_running.labels(kind).inc()
        started = self._clock.now()
        future = asyncio.get_running_loop().run_in_executor(executor, fn, *args)
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            # The process runs on regardless (a caller gone away): hold the slot and the units until it ends,
            # so the pool never runs more than its concurrency nor holds more than its cap.
            await asyncio.gather(future, return_exceptions=True)
            raise
        except BrokenProcessPool as exc:
            lane.executor = None  # the next call starts a fresh pool
            executor.shutdown(wait=False, cancel_futures=True)
            raise EngineCrashed(f"the {kind} worker process died") from exc
        finally:
            took_s = self._clock.now() - started
            self._metrics.media_running.labels(kind).dec()
            self._metrics.media_seconds.labels(kind).observe(took_s)
            if units > 0:
                lane.seconds_per_unit += _EWMA_WEIGHT * (took_s / units - lane.seconds_per_unit)

    def _processes(self, concurrency: int) -> Executor:
        # Spawned, not forked: a fork of a process running an event loop and threads may inherit held locks.
        return ProcessPoolExecutor(concurrency, mp_context=multiprocessing.get_context("spawn"),
                                   initializer=_lower_priority, initargs=(self._config.nice,))

    def allows(self, feature: Feature) -> bool:
        off_at = self._config.overlay_off_level if feature == "overlay" else self._config.stream_off_level
        allowed = self._level() < off_at
        if not allowed:
            self._metrics.media_refused.labels("ocr" if feature == "overlay" else "asr", "feature_off").inc()
        return allowed

    def spawn(self, work: Coroutine[Any, Any, None], name: str) -> None:
        """Run an async media job's `work` in the background, with the pool: `close` cancels what is left."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    @property
    def background(self) -> int:
        """Background work (async media jobs) not yet finished."""
        return len(self._background)

    async def close(self) -> None:
        await asyncio.sleep(0)  # one loop turn: a task cancelled before its first step would never record why
        for task in self._background:
            task.cancel()  # each marks its job failed, with why, as it ends
        await asyncio.gather(*self._background, return_exceptions=True)
        executors = [lane.executor for lane in self._lanes.values() if lane.executor is not None]
        for lane in self._lanes.values():
            lane.executor = None
        for executor in executors:
            await asyncio.to_thread(executor.shutdown, wait=True, cancel_futures=True)


def closing(pool: MediaPool, lifespan: Lifespan[Starlette] | None) -> Lifespan[Starlette]:
    """The app's lifespan (if any) with the pool closed after it: its processes end with the app."""

    @contextlib.asynccontextmanager
    async def run(app: Starlette) -> AsyncIterator[None]:
        try:
            if lifespan is None:
                yield
            else:
                async with lifespan(app):
                    yield
        finally:
            await pool.close()

    return run
