"""The worker: takes entries from the shared queue, runs them on its engines, answers, acknowledges.

Reading. The worker holds at most `prefetch_batches` full batches per batch in flight (in segments) and
reads the class streams of its models most critical first, up to what it has room for; only when none had
anything does it block on all of them. What it holds goes to an in-process `Scheduler` over its engines, so
entries from every gateway share batches (preferred sizes, `max_queue_delay_ms`, class order, coalescing),
exactly as in one process. Deadlines arrive as wall time and become this process's clock time on reading;
an entry read past its deadline is acknowledged and failed, not run.

Nothing accepted is lost. An entry stays pending (XREADGROUP without NOACK) until its reply and its
acknowledgement go out together. Every heartbeat the worker refreshes the idle time of what it holds and
reclaims entries idle longer than `claim_idle_ms` (XAUTOCLAIM): a killed worker's entries run again on
another one, and the gateway answers its caller once (replies are idempotent there).

Bad input. An entry that does not decode is acknowledged, logged and counted, never retried (the sender hears
why when its request id and reply stream can be read). A model that fails to load or warm keeps the worker
from ever reading work or reporting ready; it beats `ready = false` with the error until stopped, and exits 1.

Standing by (`standby=True`, `peakgate worker --standby`: the warm pool). The worker loads and warms its models,
joins the groups and beats ready with `standby = true`, but reads nothing (gateways do not count it) until its
serve flag (`Keys.serve_flag`, set by the autoscaler) appears; it polls the flag every `read_block_ms`, so a
promotion takes effect within that. Once the flag is cleared (seen at a heartbeat) it stops reading, finishes
what it holds and stands by again. A flag is per worker, not a shared consumer group joined on promotion: the
autoscaler picks which warm worker serves, and taking a worker back needs no group bookkeeping.

Stopping (`stop()`, on SIGTERM): no more reading or reclaiming, ready = false, the held entries finish and
are answered within `grace_s`; what is still running after that stays pending for another worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import Coroutine, Mapping, Sequence
from typing import Any

from peakgate.backends.base import Backend
from peakgate.cache.redis_l2 import Backoff
from peakgate.clock import Clock
from peakgate.config import BatcherConfig, ClassConfig, PriorityClass
from peakgate.errors import BadRequest, DeadlineExceeded, PeakgateError
from peakgate.observe.metrics import Metrics
from peakgate.scaleout import codec
from peakgate.scaleout.cluster import Counts, CpuMeter, Heartbeat, ModelLoad, encode_beat
from peakgate.scaleout.keys import Keys
from peakgate.scaleout.outbox import Outbox
from peakgate.scaleout.settings import QueueConfig
from peakgate.scaleout.transport import Delivery, Outbound, QueueUnreachable, WorkerTransport
from peakgate.scaleout.wall import WallClock
from peakgate.scaleout.worker_metrics import WorkerState
from peakgate.scheduling.scheduler import Scheduler
from peakgate.scheduling.timing import gather_until, wait_any

_log = logging.getLogger(__name__)
_Held = tuple[str, str]  # (stream, entry id)
_Answer = tuple[str, codec.Reply]  # (reply stream, reply)


class Worker:
    def __init__(
        self, *, config: QueueConfig, batcher: BatcherConfig, classes: Mapping[PriorityClass, ClassConfig],
        backends: Mapping[str, Backend], concurrency: Mapping[str, int], transport: WorkerTransport, clock: Clock,
        wall: WallClock, worker_id: str, grace_s: float, standby: bool = False, metrics: Metrics | None = None,
    ) -> None:
        self._config = config
        self._backends = dict(backends)
        self.metrics = metrics or Metrics()
        self._scheduler = Scheduler(backends, batcher, classes, clock, self.metrics, concurrency)
        self._batcher = batcher
        self._concurrency = dict(concurrency)
        self._transport = transport
        self._clock = clock
        self._wall = wall
        self.worker_id = worker_id
        self._grace_s = grace_s
        keys = Keys(config.stream_prefix)
        self._beat_key = keys.heartbeat(worker_id)
        self._serve_key = keys.serve_flag(worker_id)
        self._warm = standby  # started standing by: follows its serve flag both ways
        self._standby = standby
        self._first_served_wall: float | None = None  # since it began taking work (start or promotion)
        self._cpu = CpuMeter(clock)
        self._streams = [stream for streams in keys.work_by_class(backends) for stream in streams]  # by class
        self._route = {keys.work(m, p): (m, p) for m in backends for p in classes}
        self._hold_limit = 0  # set once the engines say how large their batches are
        self._held: dict[_Held, int] = {}
        self._held_segments = 0
        self._serving: set[asyncio.Task[None]] = set()
        self._outbox: Outbox[tuple[Delivery, _Answer | None]] = Outbox(self._flush)
        self._backoff = Backoff(clock, config.backoff_initial_s, config.backoff_max_s)
        self.counts = Counts()
        self._error: str | None = None
        self._joined = False
        self._stop_requested = False
        self._stopping: asyncio.Future[None] | None = None
        self._room: asyncio.Future[None] | None = None

    @property
    def ready(self) -> bool:
        """Engines warm, consumer groups joined, not draining: the worker takes work."""
        return self._error is None and self._joined and not self._stop_requested

    def state(self) -> WorkerState:
        """What its /metrics reports (read from the metrics server's thread: plain values only)."""
        return WorkerState(counts=self.counts, ready=self.ready, standby=self._standby,
                           held_segments=self._held_segments)

    def stop(self) -> None:
        """Finish what is held and return from `run` (safe to call from a signal handler, more than once)."""
        self._stop_requested = True
        for signal in (self._stopping, self._room):
            if signal is not None and not signal.done():
                signal.set_result(None)

    async def run(self) -> int:
        """Serve until `stop()`; returns 0 after a clean drain, 1 when the engines never became ready."""
        self._stopping = asyncio.get_running_loop().create_future()
        if self._stop_requested:
            self._stopping.set_result(None)
        await self._load()
        beat = asyncio.create_task(self._beat_loop(), name="peakgate-worker-beat")
        reader = asyncio.create_task(self._read_loop(), name="peakgate-worker-read") if self._error is None else None
        try:
            await self._stopping
            with contextlib.suppress(QueueUnreachable):
                await self._publish()  # draining: gateways stop counting this worker at their next poll
            if reader is not None:
                await reader  # its current read ends within read_block_ms; what it read is held and served
            await self._drain()
        finally:  # after a drain only the beat is left; cancelled (not stopped), everything goes
            tasks = [beat, *([reader] if reader is not None else []), *self._serving]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        with contextlib.suppress(QueueUnreachable):
            await self._transport.forget(self._beat_key)
            if self._warm:
                await self._transport.forget(self._serve_key)
        await self._scheduler.close()
        await asyncio.gather(*(b.close() for b in self._backends.values()), return_exceptions=True)
        await self._transport.close()
        return 0 if self._error is None else 1

    async def _load(self) -> None:
        names = list(self._backends)
        results = await asyncio.gather(*(self._backends[n].start() for n in names), return_exceptions=True)
        problems = [f"{name}: {result}" for name, result in zip(names, results, strict=True)
                    if isinstance(result, BaseException)]
        problems += [f"{name}: not warm after start" for name, result in zip(names, results, strict=True)
                     if not isinstance(result, BaseException) and not self._backends[name].cost_model().warm]
        if problems:
            self._error = "; ".join(problems)
            _log.error("worker %s will not take work: a model failed to load (%s)", self.worker_id, self._error)
            return
        self._hold_limit = sum(self._holds(name) for name in names)
        await self._scheduler.start()

    def _holds(self, model: str) -> int:
        """`prefetch_batches` full batches for each batch `model` has in flight (its engine's parallel slots and
        the scheduler's lookahead): enough to form the next batches while these run, no more."""
        size = min(self._batcher.max_batch_size, self._backends[model].cost_model().max_batch_size)
        in_flight = self._concurrency[model] + self._batcher.lookahead_batches
        return self._config.prefetch_batches * in_flight * max(1, size)

    async def _read_loop(self) -> None:
        while not self._stop_requested:
            free = self._hold_limit - self._held_segments
            if free <= 0:
                self._room = asyncio.get_running_loop().create_future()
                await self._room  # a finished entry or stop() wakes it
                continue
            try:
                if not self._joined:
                    await self._transport.ensure_groups(self._streams)
                    self._joined = True
                    await self._publish()  # ready now: gateways need not wait for the next beat
                if self._standby and not await self._promoted():
                    continue
                deliveries = await self._read(free)
            except QueueUnreachable as exc:
                await self._pause(exc)
                continue
            if self._backoff.failures:
                _log.info("worker %s reaches the queue again", self.worker_id)
                self._backoff.succeeded()
            for delivery in deliveries:
                self._accept(delivery)

    async def _promoted(self) -> bool:
        """Standing by: true once the serve flag is set; else false after `read_block_ms` (or a stop)."""
        if await self._transport.flag(self._serve_key):
            self._set_standby(False)
            await self._publish()
            return True
        assert self._stopping is not None
        await wait_any([self._stopping], self._clock, self._clock.now() + self._config.read_block_ms / 1000.0)
        return False

    def _set_standby(self, standby: bool) -> None:
        self._standby = standby
        if not standby:
            self._first_served_wall = None  # decision to first request served counts from this promotion
        _log.info("worker %s %s", self.worker_id, "stands by again" if standby else "promoted: taking work")

    async def _read(self, free: int) -> list[Delivery]:
        got = await self._transport.read(self._streams, free)  # the most critical class first
        # Nothing anywhere: wait for the first entry of any class, then read by class again.
        return got or await self._transport.wait(self._streams, self._config.read_block_ms)

    async def _pause(self, exc: QueueUnreachable) -> None:
        """Back off (exponentially) before the next try; a stop ends the pause."""
        if not self._backoff.failures:  # once per outage, not once per try
            _log.warning("worker %s cannot reach the queue, retrying: %s", self.worker_id, exc.message)
        assert self._stopping is not None
        await wait_any([self._stopping], self._clock, self._clock.now() + self._backoff.failed())

    def _accept(self, delivery: Delivery) -> None:
        """Hold a delivered entry and serve it (or answer at once why not)."""
        key = (delivery.stream, delivery.entry_id)
        if key in self._held:
            return  # reclaimed from ourselves: already being served
        try:
            entry = self._decode(delivery)
        except BadRequest as exc:
            self.counts.malformed += 1
            _log.warning("malformed entry %s on %s acknowledged and dropped: %s", delivery.entry_id,
                         delivery.stream, exc.message)
            envelope = codec.decode_envelope(delivery.payload)
            answer = None if envelope is None else (envelope.reply_to, codec.failure(envelope.request_id, exc))
            self._spawn(key, 0, self._finish(delivery, answer))
            return
        remaining_s = entry.deadline_wall_s - self._wall.now()
        if remaining_s <= 0:
            self.counts.expired += 1
            error = DeadlineExceeded("deadline passed while the request waited in the shared queue")
            self._spawn(key, 0, self._finish(delivery, (entry.reply_to, codec.failure(entry.request_id, error))))
            return
        self._spawn(key, len(entry.segments), self._serve(delivery, entry, self._clock.now() + remaining_s))

    def _decode(self, delivery: Delivery) -> codec.WorkEntry:
        entry = codec.decode_entry(delivery.payload)
        if self._route.get(delivery.stream) != (entry.model, entry.priority):
            raise BadRequest(f"entry for {entry.model}/{entry.priority} found on stream {delivery.stream}")
        return entry

    async def _serve(self, delivery: Delivery, entry: codec.WorkEntry, deadline: float) -> None:
        try:
            texts = await self._scheduler.submit(entry.model, entry.segments, entry.source, entry.target,
                                                 entry.priority, deadline, entry.split_sentences,
                                                 beam_cap=entry.beam_cap)
        except PeakgateError as exc:
            self.counts.failed += 1
            reply = codec.failure(entry.request_id, exc)
        else:
            self.counts.served += 1
            if self._first_served_wall is None:
                self._first_served_wall = self._wall.now()
            reply = codec.success(entry.request_id, texts)
        await self._finish(delivery, (entry.reply_to, reply))

    async def _finish(self, delivery: Delivery, answer: _Answer | None) -> None:
        try:
            await self._outbox.send((delivery, answer))
        except QueueUnreachable as exc:
            _log.warning("could not answer entry %s on %s (%s): it stays pending for a worker to reclaim",
                         delivery.entry_id, delivery.stream, exc.message)

    async def _flush(self, done: Sequence[tuple[Delivery, _Answer | None]]) -> None:
        """What finished meanwhile, in one round trip: one message of replies per gateway, one XACK per stream."""
        replies: dict[str, list[codec.Reply]] = {}
        acked: dict[str, list[str]] = {}
        for delivery, answer in done:
            if answer is not None:
                replies.setdefault(answer[0], []).append(answer[1])
            acked.setdefault(delivery.stream, []).append(delivery.entry_id)
        await self._transport.finish([Outbound(s, codec.encode(r)) for s, r in replies.items()], acked)

    def _spawn(self, key: _Held, segments: int, work: Coroutine[Any, Any, None]) -> None:
        self._held[key] = segments
        self._held_segments += segments
        task = asyncio.create_task(work)
        self._serving.add(task)
        task.add_done_callback(lambda done: self._release(key, done))

    def _release(self, key: _Held, task: asyncio.Task[None]) -> None:
        self._serving.discard(task)
        self._held_segments -= self._held.pop(key, 0)
        if not task.cancelled() and (exc := task.exception()) is not None:
            # A bug, not a failed translation: the entry stays pending and is reclaimed until its deadline.
            _log.error("worker %s failed serving entry %s", self.worker_id, key[1], exc_info=exc)
        if self._room is not None and not self._room.done():
            self._room.set_result(None)

    async def _beat_loop(self) -> None:
        failing = False
        while True:
            try:
                await self._publish()
                await self._touch()
                if self._warm and not self._standby and not await self._transport.flag(self._serve_key):
                    self._set_standby(True)  # taken back: the read loop stops at its next turn
                if self.ready and not self._standby:
                    await self._reclaim()
                failing = False
            except QueueUnreachable as exc:
                if not failing:  # once per outage
                    _log.warning("worker %s heartbeat failed: %s", self.worker_id, exc.message)
                failing = True
            await self._clock.sleep(self._config.heartbeat_s)

    async def _publish(self) -> None:
        await self._transport.beat(self._beat_key, encode_beat(self.heartbeat()), self._config.heartbeat_ttl_ms)

    def heartbeat(self) -> Heartbeat:
        s = self._scheduler
        models = {m: ModelLoad(s.capacity_per_s(m), s.service_time_s(m, 1), s.oldest_wait_s(m)) for m in self._backends}
        return Heartbeat(worker=self.worker_id, pid=os.getpid(), ready=self.ready, draining=self._stop_requested,
                         error=self._error, models=models, held=self._held_segments, hold_limit=self._hold_limit,
                         counts=self.counts, at_wall_s=self._wall.now(), warm=self._warm, standby=self._standby,
                         cpu_utilisation=self._cpu.read(), first_served_wall_s=self._first_served_wall)

    async def _touch(self) -> None:
        by_stream: dict[str, list[str]] = {}
        for stream, entry_id in self._held:
            by_stream.setdefault(stream, []).append(entry_id)
        for stream, ids in by_stream.items():
            await self._transport.touch(stream, ids)

    async def _reclaim(self) -> None:
        for stream in self._streams:  # most critical class first
            free = self._hold_limit - self._held_segments
            if free <= 0:
                return
            for delivery in await self._transport.reclaim(stream, self._config.claim_idle_ms, free):
                if (delivery.stream, delivery.entry_id) not in self._held:
                    self.counts.reclaimed += 1
                    _log.info("worker %s reclaimed entry %s on %s", self.worker_id, delivery.entry_id, stream)
                self._accept(delivery)

    async def _drain(self) -> None:
        if self._serving:
            _log.info("worker %s draining %d held entries", self.worker_id, len(self._serving))
            try:
                await gather_until(list(self._serving), self._clock, self._clock.now() + self._grace_s)
            except DeadlineExceeded:
                _log.error("worker %s: %d entries still running after %.1fs; they stay pending for another worker",
                           self.worker_id, len(self._serving), self._grace_s)
        await self._outbox.close()

