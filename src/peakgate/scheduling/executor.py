"""The mechanism half of plan-then-execute: worker loops that ask `batcher.plan` and run what it returns."""

from __future__ import annotations

import asyncio
import dataclasses
import logging

from peakgate.backends.base import Backend
from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, BatcherConfig
from peakgate.errors import BackendError, EngineTimeout, PeakgateError, Unavailable
from peakgate.observe.metrics import Metrics
from peakgate.resilience.breaker import CircuitBreaker, FailureKind
from peakgate.resilience.concurrency import AdaptiveLimiter
from peakgate.scheduling.batcher import BatchPlan, Wait, plan
from peakgate.scheduling.queue import RequestQueue, WorkItem, expired_error
from peakgate.scheduling.timing import wait_any

_log = logging.getLogger(__name__)


class _Signal:
    """Wakes every parked worker at once. Workers arm it before planning, so a push while they plan is not lost."""

    def __init__(self) -> None:
        self._future: asyncio.Future[None] | None = None

    def arm(self) -> asyncio.Future[None]:
        if self._future is None or self._future.done():
            self._future = asyncio.get_running_loop().create_future()
        return self._future

    def fire(self) -> None:
        if self._future is not None and not self._future.done():
            self._future.set_result(None)


class Executor:
    """Runs one model's queue through its backend: `concurrency` batches side by side (the engine's replicas)
    plus `config.lookahead_batches` handed over early so that no replica waits on the event loop.

    While interactive traffic is recent, lower-class batches hold at most `concurrency - reserved_workers`
    of those slots (never all), so an interactive batch never waits behind a lower-class one for a replica;
    an engine with bulk replicas (`CostModel.bulk_slots`, run at a lower CPU priority) gets exactly those.

    A batch is given until the latest deadline among its items (capped by `batch_timeout_s`): past that no
    caller is waiting, so a stuck engine call is abandoned and the worker moves on. Callers never wait on the
    executor for their deadline; they wait on their items' futures with it (`timing.gather_until`).
    """

    def __init__(
        self,
        queue: RequestQueue,
        backend: Backend,
        config: BatcherConfig,
        clock: Clock,
        metrics: Metrics,
        *,
        concurrency: int = 1,
        batch_timeout_s: float | None = None,
        breaker: CircuitBreaker | None = None,
        limiter: AdaptiveLimiter | None = None,
    ) -> None:
        self._queue = queue
        self._breaker = breaker
        # Gradient2 limit on batches in flight: binds only when the engine has more workers than the limit
        # (a remote pool); interactive batches on the reserved worker never wait for it.
        self._limiter = limiter
        self._backend = backend
        self._config = config
        self._clock = clock
        self._metrics = metrics
        self._model = queue.model
        self._concurrency = max(1, concurrency)
        self._batch_timeout_s = batch_timeout_s
        self._signal = _Signal()
        # Labelled children bound once: `labels()` costs a few microseconds per batch item otherwise.
        self._batch_size = metrics.batch_size.labels(self._model)
        self._busy = metrics.model_busy.labels(self._model)
        self._queue_wait = {c: metrics.queue_wait.labels(self._model, c) for c in PRIORITY_ORDER}
        self._lower_slots = self._concurrency - min(config.reserved_workers, self._concurrency - 1)
        self._lower_running = 0
        self._workers: list[asyncio.Task[None]] = []
        # Timed-out engine calls, kept referenced until they finish (the loop only holds tasks weakly).
        self._abandoned: set[asyncio.Task[list[str]]] = set()

    def start(self) -> None:
        if self._workers:
            return
        for i in range(self._concurrency + self._config.lookahead_batches):
            worker = asyncio.create_task(self._work(), name=f"peakgate-{self._model}-worker-{i}")
            worker.add_done_callback(self._worker_done)
            self._workers.append(worker)

    def notify(self) -> None:
        """New work was queued (or queued work changed): parked workers replan now."""
        self._signal.fire()

    async def close(self) -> None:
        """Stop the workers; items of batches still running fail with `Unavailable`. Queued items stay queued."""
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        for call in list(self._abandoned):
            call.cancel()

    async def _work(self) -> None:
        while True:
            signal = self._signal.arm()
            now = self._clock.now()
            recent = self._reserve_until(now)
            engine = self._backend.cost_model()
            lower_slots = engine.bulk_slots or self._lower_slots
            reserve_until = recent if recent is not None and self._lower_running >= lower_slots else None
            capped = recent is not None and not engine.bulk_slots
            decision = plan(self._queue, now, self._config, engine,
                            max_rank=0 if reserve_until is not None else None,
                            lower_cap=self._config.lower_batch_size_while_urgent if capped else None)
            self._queue.drop(decision.expired, expired_error, "deadline")
            limited = self._limiter is not None and reserve_until is None  # reserved interactive work is not
            if isinstance(decision, Wait):
                until = decision.until
                if reserve_until is not None:  # replan when the reservation lapses: lower classes may run then
                    until = reserve_until if until is None else min(until, reserve_until)
                await wait_any([signal], self._clock, until)
            elif limited and not self._try_slot():
                await wait_any([signal], self._clock, None)  # a finishing batch fires the signal
            else:
                self._queue.take(decision.items)
                await self._run_counted(decision, limited)

    async def _run_counted(self, batch: BatchPlan, limited: bool) -> None:
        """Run a batch, keeping the lower-class slot count and the adaptive limit's slot while it runs."""
        lower = batch.items[0].priority != PRIORITY_ORDER[0]  # riders on an interactive batch do not count
        self._lower_running += lower
        outcome: tuple[float | None, bool] = (None, False)
        try:
            outcome = await self._run(batch)
        finally:
            self._lower_running -= lower
            if limited:
                self._release(len(batch.items), *outcome)
            elif lower:
                self._signal.fire()  # a lower-class slot is free: workers held to interactive work replan

    def _try_slot(self) -> bool:
        return self._limiter is not None and self._limiter.try_acquire()

    def _release(self, items: int, elapsed_s: float | None, timed_out: bool) -> None:
        assert self._limiter is not None
        # Per-sentence time, so batches of different sizes give comparable round-trip samples.
        rtt = elapsed_s / max(1, items) if elapsed_s else None
        self._limiter.release(rtt, dropped=timed_out)
        self._signal.fire()

    def _reserve_until(self, now: float) -> float | None:
        """While interactive traffic is recent, when the reservation ends; None when it has lapsed."""
        seen = self._queue.last_top_enqueued_at
        if seen is None or now >= seen + self._config.reserve_window_s:
            return None
        return seen + self._config.reserve_window_s

    async def _run(self, batch: BatchPlan) -> tuple[float | None, bool]:
        """Run one batch; returns (engine seconds, or None when it never reached the engine; timed out)."""
        started = self._clock.now()
        if self._breaker is not None and not self._breaker.allow():
            # Open circuit: fail fast so callers fall back along their tier instead of waiting on a bad engine.
            retry = self._breaker.retry_after_s()
            self._fail(batch.items, Unavailable(f"{self._model} circuit is open; retry in {retry:.1f}s",
                                                retry_after_s=retry))
            return None, False
        self._observe_start(batch, started)
        timed_out = False
        try:
            outputs = await self._call(batch, self._give_up_at(batch, started))
        except PeakgateError as exc:
            self._metrics.backend_errors.labels(self._model, exc.code).inc()
            self._record(exc)
            self._fail(batch.items, exc)
            timed_out = isinstance(exc, EngineTimeout)
        except asyncio.CancelledError:
            self._fail(batch.items, Unavailable(f"scheduler for {self._model!r} closed while the batch was running"))
            raise
        else:
            if self._breaker is not None:
                self._breaker.record_success(self._clock.now() - started)
            for item, output in zip(batch.items, outputs, strict=True):
                item.resolve(output)
        finally:
            elapsed = max(0.0, self._clock.now() - started)
            self._busy.inc(elapsed)
            self._queue.drain.record(len(batch.items), elapsed)
        return elapsed, timed_out

    def _record(self, error: PeakgateError) -> None:
        if self._breaker is None:
            return
        if isinstance(error, EngineTimeout):
            self._breaker.record_failure(FailureKind.TIMEOUT)
        elif isinstance(error, BackendError):
            self._breaker.record_failure(FailureKind.ERROR)
        else:
            self._breaker.record_ignored()  # not the engine's fault (e.g. a bad request)

    def _observe_start(self, batch: BatchPlan, now: float) -> None:
        self._batch_size.observe(len(batch.items))
        for item in batch.items:
            self._queue_wait[item.priority].observe(max(0.0, now - item.enqueued_at))

    def _give_up_at(self, batch: BatchPlan, started: float) -> float:
        until = max(item.deadline for item in batch.items)
        if self._batch_timeout_s is not None:
            until = min(until, started + self._batch_timeout_s)
        return until

    async def _call(self, batch: BatchPlan, until: float) -> list[str]:
        call = asyncio.create_task(self._translate(batch))
        try:
            await wait_any([call], self._clock, until)
        except asyncio.CancelledError:
            self._abandon(call)
            raise
        if not call.done():
            self._abandon(call)
            raise EngineTimeout(
                f"{self._model} gave no answer for a batch of {len(batch.items)} before its last deadline"
            )
        return call.result()

    async def _translate(self, batch: BatchPlan) -> list[str]:
        key, texts = batch.key, [item.text for item in batch.items]
        # Batches are class-pure at the top (no lower-class fill behind interactive), so the head tells.
        options = dataclasses.replace(key.options, urgent=batch.items[0].priority == PRIORITY_ORDER[0])
        try:
            outputs = await self._backend.translate_batch(texts, key.source, key.target, options)
        except PeakgateError:
            raise
        except Exception as exc:
            raise BackendError(f"{self._model} failed on a batch of {len(texts)}: {exc!r}") from exc
        if len(outputs) != len(texts):
            raise BackendError(f"{self._model} returned {len(outputs)} translations for {len(texts)} segments")
        return outputs

    def _abandon(self, call: asyncio.Task[list[str]]) -> None:
        # Not awaited: an engine that ignores cancellation must not hold the worker hostage.
        call.cancel()
        self._abandoned.add(call)
        call.add_done_callback(self._abandoned_done)

    def _abandoned_done(self, call: asyncio.Task[list[str]]) -> None:
        self._abandoned.discard(call)
        if not call.cancelled():
            call.exception()  # nobody wants the outcome; retrieving it keeps asyncio from reporting it lost

    def _fail(self, items: tuple[WorkItem, ...], error: PeakgateError) -> None:
        now = self._clock.now()
        for item in items:
            # A batch abandoned at its deadline is, to each caller whose deadline passed, a missed deadline:
            # the same error whether the caller's own timer or the executor's fired first.
            late = isinstance(error, EngineTimeout) and now >= item.deadline
            item.fail(expired_error(item) if late else error)

    def _worker_done(self, worker: asyncio.Task[None]) -> None:
        # Workers only end by cancellation; anything else is a bug that would silently stall the model.
        if not worker.cancelled() and (exc := worker.exception()) is not None:
            _log.error("scheduler worker for %s crashed", self._model, exc_info=exc)
