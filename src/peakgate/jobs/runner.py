"""Runs queued jobs in the background, a chunk of segments at a time, at batch priority.

Each chunk is one `translate` call followed by one durable commit (`JobStore.save_chunk`), so stopping or
crashing loses at most the chunk in flight. Between chunks the runner asks `should_pause()` (the service wires
it to interactive load) and, while it says yes, sleeps on the Clock: background work yields, it is not dropped.

Running jobs take turns chunk by chunk (`FairQueue`), so one tenant's huge document does not hold up every
other job; each tenant has at most `max_active_jobs_per_tenant` in the rotation. Every store call runs off the
event loop (`AsyncJobStore`).

Deferrable jobs (the off-peak backlog) are claimed only while `OffPeak` says so (the configured daily window, or
the autoscaler's forecast trough: `jobs.offpeak`), or once their latest start has come: `latest_finish` less
their estimated run time (segments left at the measured throughput) less `defer_margin_s`. Until then they
stay queued, every other job passing them by.

Failures: `Rejected` and `BackendError` are transient (retried with capped exponential backoff, honouring
`retry_after_s`, for as long as it takes); any other error fails the job with its message.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence

from peakgate.clock import Clock
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.errors import BackendError, PeakgateError, Rejected
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.fair import FairQueue
from peakgate.jobs.formats import DocumentCodec, codec_named
from peakgate.jobs.model import TERMINAL, DeferralGate, Job, NewJob
from peakgate.jobs.offload import AsyncJobStore, Offload
from peakgate.jobs.offpeak import OffPeak, window_off_peak
from peakgate.jobs.store import JobStore, JobStoreError, WallClock
from peakgate.jobs.trim import TRIM_AFTER_SEGMENTS, release_freed_memory
from peakgate.observe.metrics import SERVING_ENDPOINT

_log = logging.getLogger(__name__)

# (segments, the job they belong to: its languages, tenant, glossary) -> one translation per segment, in order.
Translate = Callable[[Sequence[str], Job], Awaitable[list[str]]]
PauseCheck = Callable[[], bool]
CodecLookup = Callable[[str], DocumentCodec]
_TRANSIENT = (Rejected, BackendError)
JOBS_ENDPOINT = "jobs"  # the `endpoint` label of the engine work jobs cost, whichever API submitted them


class JobFailed(PeakgateError):
    """A job cannot finish (bad input, an engine answer that does not fit); recorded as its error message."""

    code = "job_failed"


def _never() -> bool:
    return False


def via_pipeline(translate: Callable[[TranslateRequest, Principal], Awaitable[TranslateResult]]) -> Translate:
    """Adapts `Service.translate` into the runner's callable: batch priority, the job's tenant and glossary,
    no API key."""
    async def run(segments: Sequence[str], job: Job) -> list[str]:
        request = TranslateRequest(tuple(segments), job.source, job.target, priority="batch",
                                   glossary_id=job.glossary_id)
        result = await translate(request, Principal(key=None, tenant=job.tenant, priority="batch"))
        return [t.text for t in result.translations]

    return run


class Throughput:
    """An EWMA of segments per second of translate time (pauses excluded), for `seconds_remaining`."""

    def __init__(self, weight: float) -> None:
        self._weight = weight
        self.segments_per_s: float | None = None

    def observe(self, segments: int, seconds: float) -> None:
        if segments <= 0 or seconds <= 0:
            return
        rate = segments / seconds
        old = self.segments_per_s
        self.segments_per_s = rate if old is None else old + self._weight * (rate - old)

    def seconds_for(self, segments: int) -> int | None:
        if self.segments_per_s is None:
            return None
        return math.ceil(segments / self.segments_per_s)


class JobRunner:
    def __init__(self, store: JobStore, translate: Translate, clock: Clock, *, config: JobsConfig | None = None,
                 should_pause: PauseCheck = _never, codecs: CodecLookup = codec_named,
                 offload: Offload = asyncio.to_thread, off_peak: OffPeak | None = None,
                 wall: WallClock = time.time) -> None:
        self._sync = store
        self.store = AsyncJobStore(store, offload)  # for async callers (the HTTP handlers too)
        self._translate = translate
        self._clock = clock
        self._config = config or JobsConfig()
        self._should_pause = should_pause
        self._codecs = codecs
        self._wakeup = asyncio.Event()
        self._tasks: list[asyncio.Task[None]] = []
        self._active = FairQueue()
        self._claimed_at: float | None = None  # when the workers last looked for queued jobs
        self.throughput = Throughput(self._config.throughput_smoothing)
        self._wall = wall
        self._off_peak = off_peak or window_off_peak(self._config, wall)  # closed with the runner

    async def start(self) -> int:
        """Re-queue what a previous process left half done, then start the workers; returns jobs recovered."""
        if self._tasks:
            return 0  # already running: recovering now would re-queue our own jobs in flight
        recovered = await self.store.recover()
        if recovered:
            _log.info("resuming %d unfinished job(s)", recovered)
        self._claimed_at = None
        self._tasks = [asyncio.create_task(self._work(), name=f"job-worker-{i}")
                       for i in range(self._config.workers)]
        return recovered

    async def close(self) -> None:
        """Stop the workers (a chunk in flight is cancelled) and put every running job back in the queue with
        its finished chunks kept. If that is cut short, or the store fails, the jobs stay 'translating' until
        the next `start()` recovers them."""
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks = []
        try:
            for job in self._active.drain():
                await self.store.release(job.id)
        finally:
            await self._off_peak.close()

    def wake(self) -> None:
        """A job was queued: workers look for it now instead of at their next poll."""
        self._wakeup.set()

    async def submit(self, job: NewJob) -> Job:
        """Store a new job (off the event loop) and wake the workers for it."""
        created = await self.store.create(job)
        self.wake()
        return created

    def seconds_remaining(self, job: Job) -> int | None:
        """From measured throughput; None when finished or before the first chunk was measured."""
        return None if job.status in TERMINAL else self.throughput.seconds_for(job.segments_left)

    async def run_next(self) -> Job | None:
        """Claim one queued job and run it to its end on its own, outside the rotation; None when none is queued."""
        job = await self.store.claim_next()
        if job is None:
            return None
        try:
            while (ended := await self._step(job)) is None:
                pass
        except asyncio.CancelledError:
            await self.store.release(job.id)
            raise
        return ended

    async def _step(self, job: Job) -> Job | None:
        """One chunk of `job`; the job as finished or failed when it ended, None while it has more to do."""
        try:
            pending = await self.store.pending(job.id, self._config.chunk_segments)
            if not pending:
                output = await self.store.run(lambda: self._output(job))
                if output is not None and job.segments_total >= TRIM_AFTER_SEGMENTS:
                    await self.store.run(release_freed_memory)
                return await self.store.finish(job.id, output)
            await self._wait_while_paused()
            texts = [text for _, text in pending]
            started = self._clock.now()
            translations = await self._translate_chunk(job, texts)
            self.throughput.observe(len(texts), self._clock.now() - started)
            billed = sum(len(text) for text in texts)
            await self.store.save_chunk(job.id, [(i, t) for (i, _), t in zip(pending, translations, strict=True)],
                                        billed)
            return None
        except JobStoreError:
            raise  # the database is failing: recording the error would fail too
        except PeakgateError as exc:
            _log.info("job %s failed: %s", job.id, exc.message)
            return await self.store.fail(job.id, exc.message)
        except Exception:
            _log.exception("job %s failed unexpectedly", job.id)
            return await self.store.fail(job.id, "internal error while translating the document")

    async def _wait_while_paused(self) -> None:
        while self._should_pause():
            await self._clock.sleep(self._config.pause_poll_s)

    async def _translate_chunk(self, job: Job, texts: list[str]) -> list[str]:
        attempt = 0
        while True:
            try:
                translations = await self._translate(texts, job)
            except _TRANSIENT as exc:
                delay = self._backoff(attempt, exc.retry_after_s)
                attempt += 1
                _log.warning("job %s: %s (attempt %d), retrying in %.1fs", job.id, exc.message, attempt, delay)
                await self._clock.sleep(delay)
                continue
            if len(translations) != len(texts):
                raise JobFailed(f"the engine returned {len(translations)} translations for {len(texts)} segments")
            return translations

    def _backoff(self, attempt: int, retry_after_s: float | None) -> float:
        exponential = self._config.retry_initial_s * 2.0 ** min(attempt, 32)
        return min(self._config.retry_max_s, max(exponential, retry_after_s or 0.0))

    def _output(self, job: Job) -> bytes | None:
        """The translated document; blocking (whole-document reads and a rebuild), so it runs off the loop."""
        if job.kind != "document" or job.format is None:
            return None  # batch results are read segment by segment
        data = self._sync.input_data(job.id)
        translations = self._sync.translations(job.id)
        if data is None or any(t is None for t in translations):
            raise JobFailed("the job's stored input is incomplete")
        return self._codecs(job.format).rebuild(data, [t for t in translations if t is not None])

    async def _work(self) -> None:
        SERVING_ENDPOINT.set(JOBS_ENDPOINT)  # this task's own context: the requests' endpoints stay theirs
        while True:
            await self._claim_if_due()
            job = self._active.take()
            if job is None:
                await self._idle()
                continue
            try:
                ended = await self._step(job)
            except JobStoreError:
                _log.exception("job store failed; job %s waits for the next start-up", job.id)
                self._active.remove(job)
                await self._idle()
                continue
            if ended is None:
                self._active.put_back(job)
            else:
                self._active.remove(job)
                self.wake()  # a place in the rotation is free: claim the next queued job

    async def _claim_if_due(self) -> None:
        """Bring queued jobs into the rotation: when woken, else once per idle poll (jobs other processes
        queued), so claiming costs nothing per chunk."""
        now = self._clock.now()
        woken = self._wakeup.is_set()
        if not woken and self._claimed_at is not None and now - self._claimed_at < self._config.idle_poll_s:
            return
        self._wakeup.clear()
        self._claimed_at = now
        try:
            while job := await self.store.claim_next(
                    self._active.full_tenants(self._config.max_active_jobs_per_tenant), await self._deferral_gate()):
                self._active.add(job)
        except JobStoreError:
            _log.exception("job store failed while claiming; retrying after the idle poll")

    async def _deferral_gate(self) -> DeferralGate:
        rate = self.throughput.segments_per_s or self._config.defer_prior_segments_per_s
        return DeferralGate(off_peak=await self._off_peak.is_off_peak(), now_wall_s=self._wall(),
                            s_per_segment=1.0 / rate, margin_s=self._config.defer_margin_s)

    async def _idle(self) -> None:
        sleeper = asyncio.ensure_future(self._clock.sleep(self._config.idle_poll_s))
        waiter = asyncio.ensure_future(self._wakeup.wait())
        try:
            await asyncio.wait({sleeper, waiter}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (sleeper, waiter):
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task

