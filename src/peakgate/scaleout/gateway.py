"""The gateway half of the Redis Streams work queue: a `WorkQueue` whose engines run in worker processes.

`submit` appends one entry per call to `{prefix}:q:{model}:{class}` (through an `Outbox`: one pipelined XADD
per round trip under load) and waits, on its own deadline, for the answer that a worker appends to this
gateway's reply stream. One reader task per gateway resolves the waiting callers by request id; a reply for
a request no longer waiting (answered already by an earlier run, or given up) is dropped and counted, so a
caller is answered at most once however often its entry ran.

Failing fast instead of hanging:
- every Redis call has a timeout; a failure opens a backoff (`cache.redis_l2.Backoff`) during which `submit`
  raises `QueueUnreachable` (503 + Retry-After) without trying Redis, and the reader failing fails every
  waiting caller the same way (their replies could not arrive);
- a model no ready worker serves (from heartbeats) is refused at once, so the service falls back along its
  tier, instead of queueing work nobody will take before its deadline;
- with `queue.fallback = "local"`, both cases run the request on this process's engines instead.

The router's and the guard's signals come from what this gateway sees: the oldest unanswered request per
model (its load), and the workers' heartbeats (cluster capacity, service time per sentence).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from peakgate.backends.base import Health
from peakgate.cache.redis_l2 import Backoff
from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, PriorityClass, Settings
from peakgate.errors import BadRequest, DeadlineExceeded, PeakgateError, Unavailable, UnknownModel
from peakgate.observe.metrics import Metrics
from peakgate.scaleout import codec
from peakgate.scaleout.cluster import ClusterView
from peakgate.scaleout.keys import Keys
from peakgate.scaleout.metrics import QueueMetrics
from peakgate.scaleout.outbox import Outbox
from peakgate.scaleout.redis_streams import RedisStreams
from peakgate.scaleout.settings import QueueConfig
from peakgate.scaleout.transport import GatewayTransport, Outbound, QueueUnreachable
from peakgate.scaleout.wall import SystemWallClock, WallClock
from peakgate.scheduling.queue import DrainRate
from peakgate.scheduling.timing import wait_any
from peakgate.scheduling.work_queue import WorkQueue

_log = logging.getLogger(__name__)
_REPLY_BATCH = 512
_PRIOR = DrainRate()


@dataclass(eq=False, slots=True)
class _Waiting:
    """A caller waiting for a worker's answer."""

    model: str
    rank: int
    segments: int
    deadline: float
    sent_at: float
    future: asyncio.Future[list[str]]


class RedisWorkQueue:
    def __init__(
        self, config: QueueConfig, models: Iterable[str], transport: GatewayTransport, *, clock: Clock,
        wall: WallClock, metrics: QueueMetrics, gateway_id: str, fallback: WorkQueue | None = None,
    ) -> None:
        self._config = config
        self._models = frozenset(models)
        self._transport = transport
        self._clock = clock
        self._wall = wall
        self._metrics = metrics
        self._keys = Keys(config.stream_prefix)
        self._gateway = gateway_id
        self._reply_stream = self._keys.reply(gateway_id)
        self._fallback = fallback
        self._cluster = ClusterView()
        self._backoff = Backoff(clock, config.backoff_initial_s, config.backoff_max_s)
        self._down_until = 0.0
        self._outbox: Outbox[Outbound] = Outbox(transport.enqueue)
        self._ids = itertools.count(1)
        self._waiting: dict[int, _Waiting] = {}
        self._by_model: dict[str, dict[int, _Waiting]] = {model: {} for model in self._models}  # oldest first
        self._last_urgent_at: float | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._running = False
        self._closed = False

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock, metrics: Metrics, *,
                      fallback: WorkQueue | None = None) -> RedisWorkQueue:
        gateway = uuid.uuid4().hex[:12]
        return cls(settings.queue, (m.name for m in settings.models), RedisStreams.connect(settings.queue, gateway),
                   clock=clock, wall=SystemWallClock(), metrics=QueueMetrics(metrics.registry), gateway_id=gateway,
                   fallback=fallback)

    @property
    def gateway_id(self) -> str:
        return self._gateway

    def ready_workers(self, model: str) -> int:
        """Workers whose heartbeat says they serve `model` and are ready (as of the last poll)."""
        return self._cluster.ready_workers(model)

    def health(self, model: str) -> Health:
        """`model` as the shared queue serves it: DOWN while Redis is out of reach or no worker is ready for it,
        so the router falls back past it (the service's readiness and health can take it from here)."""
        if not self._backoff.ready() or not self._cluster.ready_workers(model):
            return Health.DOWN
        return Health.OK

    async def start(self) -> None:
        if self._closed:
            raise Unavailable("work queue was closed; build a new one")
        if self._fallback is not None:
            await self._fallback.start()
        await self._poll()
        self._tasks = [asyncio.create_task(self._read_replies(), name="peakgate-queue-replies"),
                       asyncio.create_task(self._watch_workers(), name="peakgate-queue-workers")]
        self._running = True

    async def close(self) -> None:
        self._running, self._closed = False, True
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._fail_waiting(lambda: Unavailable("the gateway shut down before a worker answered; retry"))
        await self._outbox.close()
        with contextlib.suppress(QueueUnreachable):
            await self._transport.forget(self._reply_stream)
        await self._transport.close()
        if self._fallback is not None:
            await self._fallback.close()

    async def submit(  # noqa: PLR0917 - the WorkQueue signature
        self, model: str, segments: Sequence[str], source: str, target: str, priority: PriorityClass,
        deadline: float, split_sentences: bool = True, *, beam_cap: int | None = None,
    ) -> list[str]:
        self._known(model)
        if not self._running:
            raise Unavailable(f"work queue for {model!r} is not running")
        now = self._clock.now()
        if deadline <= now:
            raise DeadlineExceeded("deadline passed before the request was queued")
        entry = codec.WorkEntry(
            request_id=next(self._ids), gateway=self._gateway, reply_to=self._reply_stream, model=model,
            source=source, target=target, priority=priority, segments=list(segments),
            split_sentences=split_sentences, beam_cap=beam_cap, deadline_wall_s=self._wall.now() + deadline - now,
        )
        try:
            return await self._remote(entry, deadline)
        except QueueUnreachable:
            if self._fallback is None:
                raise
        self._metrics.local_fallbacks.labels(model).inc()
        return await self._fallback.submit(model, segments, source, target, priority, deadline, split_sentences,
                                           beam_cap=beam_cap)

    async def _remote(self, entry: codec.WorkEntry, deadline: float) -> list[str]:
        self._check_reachable(entry.model)
        now = self._clock.now()
        rank = PRIORITY_ORDER.index(entry.priority)
        waiting = _Waiting(entry.model, rank, len(entry.segments), deadline, now,
                           asyncio.get_running_loop().create_future())
        self._hold(entry.request_id, waiting)
        if rank == 0:
            self._last_urgent_at = now
        try:
            try:
                await self._outbox.send(Outbound(self._keys.work(entry.model, entry.priority), codec.encode(entry)))
            except QueueUnreachable:
                self._down()
                raise
            await wait_any([waiting.future], self._clock, deadline)
            if not waiting.future.done():
                raise DeadlineExceeded("deadline passed before a worker answered")
            return waiting.future.result()
        finally:
            self._release(entry.request_id, entry.model)

    def _check_reachable(self, model: str) -> None:
        if not self._backoff.ready():
            self._metrics.unreachable.labels(model, "redis").inc()
            retry = max(0.0, self._down_until - self._clock.now())
            raise QueueUnreachable(f"work queue unreachable; retry in {retry:.1f}s", retry_after_s=retry)
        if not self._cluster.ready_workers(model):
            self._metrics.unreachable.labels(model, "no_worker").inc()
            raise QueueUnreachable(f"no ready worker serves {model!r}; retry shortly",
                                   retry_after_s=self._config.heartbeat_s)

    def _down(self) -> float:
        delay = self._backoff.failed()
        self._down_until = self._clock.now() + delay
        return delay

    async def _read_replies(self) -> None:
        after = "0-0"  # the stream is this process's alone: everything in it is ours
        while True:
            try:
                after, payloads = await self._transport.replies(self._reply_stream, after, _REPLY_BATCH,
                                                                self._config.read_block_ms)
            except QueueUnreachable as exc:
                await self._lost(exc)
                continue
            self._backoff.succeeded()
            for payload in payloads:
                self._deliver(payload)

    async def _lost(self, exc: QueueUnreachable) -> None:
        """Replies cannot arrive: every waiting caller fails now (503 + Retry-After), then retry after a pause."""
        delay = self._down()
        _log.warning("work queue unreachable, failing waiting requests; retrying in %.1fs: %s", delay, exc.message)
        self._fail_waiting(lambda: QueueUnreachable(f"lost the work queue: {exc.message}", retry_after_s=delay))
        await self._clock.sleep(delay)

    def _deliver(self, payload: bytes) -> None:
        try:
            replies = codec.decode_replies(payload)
        except BadRequest as exc:
            _log.warning("dropping an unreadable reply: %s", exc.message)
            self._metrics.replies_dropped.labels("malformed").inc()
            return
        for reply in replies:
            waiting = self._waiting.get(reply.request_id)
            if waiting is None or waiting.future.done():
                self._metrics.replies_dropped.labels("unmatched").inc()
                continue
            result = codec.outcome(reply, waiting.segments)
            if isinstance(result, PeakgateError):
                waiting.future.set_exception(result)
            else:
                waiting.future.set_result(result)

    async def _watch_workers(self) -> None:
        while True:
            await self._clock.sleep(self._config.heartbeat_s)
            await self._poll()

    async def _poll(self) -> None:
        try:
            payloads = await self._transport.heartbeats(self._keys.heartbeats)
        except QueueUnreachable:
            return  # the reply reader's backoff speaks for Redis; keep the last picture
        self._cluster.update(payloads)
        for model in self._models:
            self._metrics.workers_ready.labels(model).set(self._cluster.ready_workers(model))

    def shed_queued(self, priority: PriorityClass, error: Callable[[object], PeakgateError],
                    drain_per_s: float | None = None) -> int:
        """Fail waiting callers now (their entries still run; the replies are then dropped): with `drain_per_s`,
        those of `priority` that would miss their deadline at that rate in deadline order; without, all of it
        and every less urgent class. Returns how many segments."""
        rank = PRIORITY_ORDER.index(priority)
        live = [w for w in self._waiting.values() if not w.future.done()]
        if drain_per_s is None:
            victims = [w for w in live if w.rank >= rank]
        else:
            victims = _late(sorted((w for w in live if w.rank == rank), key=lambda w: w.deadline),
                            self._clock.now(), drain_per_s)
        for waiting in victims:
            waiting.future.set_exception(error(waiting))
        shed = sum(w.segments for w in victims)
        return shed + (self._fallback.shed_queued(priority, error, drain_per_s) if self._fallback else 0)

    def urgent_backlog(self, window_s: float) -> bool:
        seen = self._last_urgent_at
        if self._waiting and seen is not None and self._clock.now() - seen < window_s:
            return True
        return self._fallback is not None and self._fallback.urgent_backlog(window_s)

    def service_time_s(self, model: str, segments: int) -> float:
        self._known(model)
        if self._fallback is not None and not self._cluster.ready_workers(model):
            return self._fallback.service_time_s(model, segments)
        return segments * self._cluster.s_per_item(model)

    def capacity_per_s(self, model: str) -> float:
        self._known(model)
        capacity = self._cluster.capacity_per_s(model)
        if capacity > 0:
            return capacity
        return self._fallback.capacity_per_s(model) if self._fallback is not None else _PRIOR.items_per_s

    def oldest_wait_s(self, model: str) -> float:
        self._known(model)
        oldest = next(iter(self._by_model[model].values()), None)
        own = 0.0 if oldest is None else max(0.0, self._clock.now() - oldest.sent_at)
        return max(own, self._fallback.oldest_wait_s(model)) if self._fallback is not None else own

    def _known(self, model: str) -> None:
        if model not in self._models:
            raise UnknownModel(f"unknown model {model!r}; the work queue serves {sorted(self._models)}")

    def _hold(self, request_id: int, waiting: _Waiting) -> None:
        self._waiting[request_id] = waiting
        self._by_model[waiting.model][request_id] = waiting
        self._metrics.waiting.set(len(self._waiting))

    def _release(self, request_id: int, model: str) -> None:
        self._waiting.pop(request_id, None)
        self._by_model[model].pop(request_id, None)
        self._metrics.waiting.set(len(self._waiting))

    def _fail_waiting(self, error: Callable[[], PeakgateError]) -> None:
        for waiting in self._waiting.values():
            if not waiting.future.done():
                waiting.future.set_exception(error())


def _late(ordered: Iterable[_Waiting], now: float, drain_per_s: float) -> list[_Waiting]:
    """Callers (in deadline order) whose segments, each behind those before, finish past their deadline at
    `drain_per_s` segments per second."""
    late: list[_Waiting] = []
    ahead = 0
    for waiting in ordered:
        ahead += waiting.segments
        if now + ahead / drain_per_s > waiting.deadline:
            late.append(waiting)
            ahead -= waiting.segments  # it leaves: the ones after it move up
    return late
