"""The scheduling facade: one queue, coalescer and executor per model behind `submit`."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from peakgate.backends.base import Backend, DecodeOptions
from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, BatcherConfig, ClassConfig, PriorityClass
from peakgate.errors import ConfigError, DeadlineExceeded, PeakgateError, Unavailable, UnknownModel
from peakgate.observe.metrics import Metrics
from peakgate.resilience.breaker import Breakers, CircuitBreaker
from peakgate.resilience.concurrency import AdaptiveLimiter
from peakgate.resilience.settings import ConcurrencyConfig
from peakgate.scheduling import split
from peakgate.scheduling.coalesce import Coalescer, normalize
from peakgate.scheduling.executor import Executor
from peakgate.scheduling.queue import BatchKey, RequestQueue, WorkItem
from peakgate.scheduling.timing import gather_until


@dataclass(frozen=True, slots=True)
class _Lane:
    queue: RequestQueue
    coalescer: Coalescer
    executor: Executor


class Scheduler:
    """Queues sentences per model, batches them dynamically and runs them on the model's backend.

    The caller owns the backends' lifecycle (`Backend.start`/`close`); the scheduler only calls
    `translate_batch` and `cost_model`. Decode options come from the request's priority class.
    """

    def __init__(  # noqa: PLR0917 - the signature the service is written against
        self,
        backends: Mapping[str, Backend],
        batcher: BatcherConfig,
        classes: Mapping[PriorityClass, ClassConfig],
        clock: Clock,
        metrics: Metrics,
        concurrency: int | Mapping[str, int] = 1,
        *,
        batch_timeout_s: float | None = None,
        breakers: Breakers | None = None,
        limits: ConcurrencyConfig | None = None,
    ) -> None:
        missing = [name for name in PRIORITY_ORDER if name not in classes]
        if missing:
            raise ConfigError(f"scheduler needs a config for every priority class; missing {missing}")
        workers = {m: concurrency if isinstance(concurrency, int) else concurrency.get(m, 1) for m in backends}
        bad = {m: n for m, n in workers.items() if n < 1}
        if bad:
            raise ConfigError(f"scheduler concurrency must be at least 1 per model, not {bad}")
        self._clock = clock
        self._options = {
            name: DecodeOptions(beam_size=c.beam_size, max_decoding_length=c.max_decoding_length)
            for name, c in classes.items()
        }
        self._lanes = {
            model: _lane(
                model, backend, batcher=batcher, clock=clock, metrics=metrics,
                concurrency=workers[model], batch_timeout_s=batch_timeout_s,
                breaker=breakers.get(model) if breakers is not None else None,
                limiter=AdaptiveLimiter(limits, clock) if limits is not None else None,
            )
            for model, backend in backends.items()
        }
        self._running = False
        self._closed = False

    async def start(self) -> None:
        if self._closed:
            raise Unavailable("scheduler was closed; build a new one")
        for lane in self._lanes.values():
            lane.executor.start()
        self._running = True

    async def close(self) -> None:
        """Stop every worker, then fail everything still queued with `Unavailable`: nothing is dropped silently."""
        self._running, self._closed = False, True
        for lane in self._lanes.values():
            await lane.executor.close()
        for lane in self._lanes.values():
            lane.queue.drop_all(_shutdown_error, "shutdown")

    async def submit(  # noqa: PLR0917 - the signature the service is written against
        self,
        model: str,
        segments: Sequence[str],
        source: str,
        target: str,
        priority: PriorityClass,
        deadline: float,
        split_sentences: bool = True,
        *,
        beam_cap: int | None = None,
    ) -> list[str]:
        """Translate `segments` in order before `deadline` (absolute clock time).

        Raises `UnknownModel`, `Unavailable` (not running), `Overloaded` with `retry_after_s` (queue full:
        nothing was queued), `InputTooLarge` (more sentences than the queue holds), `DeadlineExceeded`, or
        the `BackendError` of the batch a sentence ran in.
        """
        lane = self._get(model)
        if not self._running:
            raise Unavailable(f"scheduler for {model!r} is not running")
        now = self._clock.now()
        if deadline <= now:
            raise DeadlineExceeded("deadline passed before the request was queued")
        splitter = split.split_sentences if split_sentences else split.keep_whole
        pieces = [splitter(segment) for segment in segments]
        texts = [normalize(sentence) for piece in pieces for sentence in piece.sentences]
        options = self._options[priority]
        if beam_cap is not None and options.beam_size > beam_cap:  # degraded: cheaper decoding
            options = dataclasses.replace(options, beam_size=beam_cap)
        key = BatchKey(source, target, options)
        items = lane.coalescer.acquire(texts, key, priority, deadline, now)
        lane.executor.notify()
        try:
            outputs = await gather_until([item.future for item in items], self._clock, deadline)
        finally:
            lane.coalescer.release(items, self._clock.now())
        return _reassemble(pieces, outputs)

    def shed_queued(self, priority: PriorityClass, error: Callable[[WorkItem], PeakgateError],
                    drain_per_s: float | None = None) -> int:
        """Fail queued work with `error` at once, where a 503 with Retry-After now beats a 504 at its deadline:
        with `drain_per_s` (the class's measured rate), the items of `priority` that would miss their deadline
        at that rate in deadline order; without (the class is starved), all of it and every less urgent class.
        Returns how many."""
        rank = PRIORITY_ORDER.index(priority)
        now = self._clock.now()
        shed = 0
        for lane in self._lanes.values():
            if drain_per_s is None:
                shed += lane.queue.drop_from(rank, error, "shed")
            else:
                shed += lane.queue.drop(doomed(lane.queue.by_deadline(), rank, now, drain_per_s), error, "shed")
        return shed

    def queue_depth(self, model: str) -> int:
        return len(self._get(model).queue)

    def urgent_backlog(self, window_s: float) -> bool:
        """True while some model has queued work and took interactive traffic in the last `window_s`."""
        now = self._clock.now()
        for lane in self._lanes.values():
            seen = lane.queue.last_top_enqueued_at
            if len(lane.queue) and seen is not None and now - seen < window_s:
                return True
        return False

    def service_time_s(self, model: str, segments: int) -> float:
        """Engine time for `segments` at the measured drain rate (one worker's share)."""
        return segments * self._get(model).queue.drain.s_per_item

    def capacity_per_s(self, model: str) -> float:
        """Sentences per second `model` completes while busy, all workers together."""
        return self._get(model).queue.drain.items_per_s

    def oldest_wait_s(self, model: str) -> float:
        oldest = self._get(model).queue.oldest_enqueued_at()
        return 0.0 if oldest is None else max(0.0, self._clock.now() - oldest)

    def _get(self, model: str) -> _Lane:
        lane = self._lanes.get(model)
        if lane is None:
            raise UnknownModel(f"unknown model {model!r}; the scheduler serves {sorted(self._lanes)}")
        return lane


def _lane(
    model: str, backend: Backend, *, batcher: BatcherConfig, clock: Clock, metrics: Metrics,
    concurrency: int, batch_timeout_s: float | None, breaker: CircuitBreaker | None,
    limiter: AdaptiveLimiter | None,
) -> _Lane:
    queue = RequestQueue(
        # Drain rate per batch slot: a looked-ahead batch's time includes its wait behind a running one.
        model, batcher.max_queue_len, workers=concurrency + batcher.lookahead_batches,
        lower_share=batcher.lower_class_queue_share,
        on_length=metrics.queue_length.labels(model).set,
        on_drop=lambda reason, n: metrics.dropped.labels(model, reason).inc(n),
    )
    executor = Executor(
        queue, backend, batcher, clock, metrics, concurrency=concurrency, batch_timeout_s=batch_timeout_s,
        breaker=breaker, limiter=limiter,
    )
    return _Lane(queue, Coalescer(queue, metrics), executor)


def doomed(ordered: Iterable[WorkItem], rank: int, now: float, drain_per_s: float) -> list[WorkItem]:
    """Items of class `rank` (in deadline order) that, each behind the ones before it, finish past their deadline
    at `drain_per_s` sentences per second."""
    late: list[WorkItem] = []
    ahead = 0
    for item in ordered:
        if item.rank != rank:
            continue
        ahead += 1
        if now + ahead / drain_per_s > item.deadline:
            late.append(item)
            ahead -= 1  # it leaves the queue: the ones after it move up
    return late


def _shutdown_error(item: WorkItem) -> Unavailable:
    return Unavailable(f"the scheduler shut down before this {item.priority} sentence ran; retry")


def _reassemble(pieces: Sequence[split.Split], outputs: Sequence[str]) -> list[str]:
    # The source's separators supply all outer whitespace, so an engine's stray newline cannot double it.
    results: list[str] = []
    start = 0
    for piece in pieces:
        end = start + len(piece.sentences)
        results.append(piece.join([output.strip() for output in outputs[start:end]]))
        start = end
    return results

