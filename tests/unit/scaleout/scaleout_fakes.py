"""In-memory Redis Streams semantics (streams, one consumer group each, pending entries with idle times, keys
with a TTL) on a FakeClock, behind both queue transports; plus engines for the worker tests."""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from prometheus_client import CollectorRegistry

from peakgate.backends.base import CostModel, DecodeOptions, Health
from peakgate.clock import FakeClock
from peakgate.config import BatcherConfig, ClassConfig, PriorityClass
from peakgate.scaleout.gateway import RedisWorkQueue
from peakgate.scaleout.metrics import QueueMetrics
from peakgate.scaleout.settings import QueueConfig
from peakgate.scaleout.transport import Delivery, Outbound, QueueUnreachable
from peakgate.scaleout.worker import Worker
from peakgate.scheduling.timing import wait_any
from peakgate.scheduling.work_queue import WorkQueue

WALL_START = 1_700_000_000.0
MODEL = "echo"
CONFIG = QueueConfig(backend="redis", claim_idle_ms=2_000, heartbeat_s=0.5, read_block_ms=100,
                     socket_timeout_ms=500, prefetch_batches=1)
BATCHER = BatcherConfig(max_batch_size=4, preferred_batch_sizes=(4,), max_queue_delay_ms=5.0, lookahead_batches=0)
CLASSES: dict[PriorityClass, ClassConfig] = {
    "interactive": ClassConfig(deadline_ms=3_000), "document": ClassConfig(deadline_ms=30_000),
    "batch": ClassConfig(deadline_ms=300_000),
}


async def settle(rounds: int = 60) -> None:
    for _ in range(rounds):
        await asyncio.sleep(0)


async def advance(clock: FakeClock, seconds: float, step: float = 0.01) -> None:
    """Move time in steps, letting every task run at each."""
    moved = 0.0
    while moved < seconds - 1e-9:
        delta = min(step, seconds - moved)
        clock.advance(delta)
        moved += delta
        await settle()


def _num(entry_id: str) -> int:
    return int(entry_id.partition("-")[0])


@dataclass
class _Pending:
    consumer: str
    delivered_at: float


@dataclass
class _Stream:
    entries: dict[int, bytes | None] = field(default_factory=dict)
    grouped: bool = False
    last_delivered: int = 0
    pending: dict[int, _Pending] = field(default_factory=dict)


class FakeRedis:
    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.streams: dict[str, _Stream] = {}
        self.keys: dict[str, tuple[bytes, float]] = {}
        self.down = False
        self.ops: list[str] = []
        self._ids = itertools.count(1)
        self._waiters: list[asyncio.Future[None]] = []

    def stream(self, name: str) -> _Stream:
        return self.streams.setdefault(name, _Stream())

    def add(self, stream: str, payload: bytes | None) -> str:
        entry_id = next(self._ids)
        self.stream(stream).entries[entry_id] = payload
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        return f"{entry_id}-0"

    def pending(self, stream: str) -> int:
        return len(self.stream(stream).pending)

    def live_keys(self, prefix: str) -> dict[str, bytes]:
        now = self.clock.now()
        return {k: v for k, (v, expires) in self.keys.items() if k.startswith(prefix) and expires > now}

    async def wait(self, block_ms: int) -> None:
        waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await wait_any([waiter], self.clock, self.clock.now() + block_ms / 1000.0)
        finally:
            self._waiters.remove(waiter)


class Wall:
    """Wall time moving with the FakeClock (gateways and workers of one test share it)."""

    def __init__(self, clock: FakeClock, skew_s: float = 0.0) -> None:
        self._clock = clock
        self._skew_s = skew_s

    def now(self) -> float:
        return WALL_START + self._skew_s + self._clock.now()


class FakeTransport:
    """One process's connection: consumer `name`. `frozen` makes every call hang (a killed or stalled process)."""

    def __init__(self, redis: FakeRedis, name: str) -> None:
        self.redis = redis
        self.name = name
        self.frozen: asyncio.Event | None = None

    async def _op(self, what: str) -> None:
        if self.frozen is not None:
            await self.frozen.wait()
        self.redis.ops.append(what)  # every attempt, failed or not
        if self.redis.down:
            raise QueueUnreachable(f"fake redis is down ({what})", retry_after_s=0.5)

    def freeze(self) -> asyncio.Event:
        self.frozen = asyncio.Event()
        return self.frozen

    async def ensure_groups(self, streams: Sequence[str]) -> None:
        await self._op("XGROUP")
        for name in streams:
            self.redis.stream(name).grouped = True

    async def read(self, streams: Sequence[str], count: int) -> list[Delivery]:
        await self._op("XREADGROUP")
        got: list[Delivery] = []
        for stream in streams:
            got += self._take([stream], count - len(got))
        return got

    async def wait(self, streams: Sequence[str], block_ms: int) -> list[Delivery]:
        await self._op("XREADGROUP BLOCK")
        got = self._take(streams, 1)
        if not got:
            await self.redis.wait(block_ms)
            got = self._take(streams, 1)
        return got

    def _take(self, streams: Sequence[str], count: int) -> list[Delivery]:
        got: list[Delivery] = []
        for name in streams:
            stream = self.redis.stream(name)
            fresh = [i for i in stream.entries if i > stream.last_delivered][:count]
            for entry_id in fresh:
                stream.last_delivered = entry_id
                stream.pending[entry_id] = _Pending(self.name, self.redis.clock.now())
                got.append(Delivery(name, f"{entry_id}-0", stream.entries[entry_id]))
        return got

    async def reclaim(self, stream: str, min_idle_ms: int, count: int) -> list[Delivery]:
        await self._op("XAUTOCLAIM")
        state = self.redis.stream(stream)
        now = self.redis.clock.now()
        idle = [i for i, p in state.pending.items() if now - p.delivered_at >= min_idle_ms / 1000.0][:count]
        for entry_id in idle:
            state.pending[entry_id] = _Pending(self.name, now)
        return [Delivery(stream, f"{i}-0", state.entries[i]) for i in idle if i in state.entries]

    async def touch(self, stream: str, entry_ids: Sequence[str]) -> None:
        await self._op("XCLAIM")
        state = self.redis.stream(stream)
        for entry_id in entry_ids:
            if (n := _num(entry_id)) in state.pending:
                state.pending[n] = _Pending(self.name, self.redis.clock.now())

    async def finish(self, replies: Sequence[Outbound], done: Mapping[str, Sequence[str]]) -> None:
        await self._op("FINISH")
        for reply in replies:
            self.redis.add(reply.stream, reply.payload)
        for name, ids in done.items():
            stream = self.redis.stream(name)
            for entry_id in ids:
                stream.pending.pop(_num(entry_id), None)
                stream.entries.pop(_num(entry_id), None)

    async def beat(self, key: str, payload: bytes, ttl_ms: int) -> None:
        await self._op("SET")
        self.redis.keys[key] = (payload, self.redis.clock.now() + ttl_ms / 1000.0)

    async def forget(self, key: str) -> None:
        await self._op("DEL")
        self.redis.keys.pop(key, None)
        self.redis.streams.pop(key, None)

    async def enqueue(self, entries: Sequence[Outbound]) -> None:
        await self._op("XADD")
        for entry in entries:
            self.redis.add(entry.stream, entry.payload)

    async def replies(self, stream: str, after: str, count: int, block_ms: int) -> tuple[str, list[bytes]]:
        await self._op("XREAD")
        got = self._after(stream, after, count)
        if not got:
            await self.redis.wait(block_ms)
            got = self._after(stream, after, count)
        return (f"{got[-1][0]}-0" if got else after), [payload or b"" for _, payload in got]

    def _after(self, stream: str, after: str, count: int) -> list[tuple[int, bytes | None]]:
        start = _num(after)
        return [(i, p) for i, p in self.redis.stream(stream).entries.items() if i > start][:count]

    async def heartbeats(self, pattern: str) -> list[bytes]:
        await self._op("SCAN")
        return list(self.redis.live_keys(pattern.rstrip("*")).values())

    async def close(self) -> None:
        return None


class Engine:
    """Echo with `<...>` around each segment, recording batches; `delay_s` of engine time per batch on the clock,
    `gate` (when set) holds every batch; `broken` fails `start`."""

    def __init__(self, clock: FakeClock, *, delay_s: float = 0.0, broken: bool = False) -> None:
        self.clock = clock
        self.delay_s = delay_s
        self.broken = broken
        self.batches: list[tuple[str, ...]] = []
        self.gate: asyncio.Event | None = None
        self.started = False

    @property
    def name(self) -> str:
        return MODEL

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        return frozenset({("en", "es")})

    async def start(self) -> None:
        if self.broken:
            raise OSError("model files missing")
        self.started = True

    async def translate_batch(self, segments: Sequence[str], source: str, target: str,
                              options: DecodeOptions) -> list[str]:
        self.batches.append(tuple(segments))
        if self.gate is not None:
            await self.gate.wait()
        if self.delay_s:
            await self.clock.sleep(self.delay_s)
        return [f"<{s}>" for s in segments]

    def cost_model(self) -> CostModel:
        return CostModel(BATCHER.max_batch_size, BATCHER.preferred_batch_sizes, self.started)

    def health(self) -> Health:
        return Health.OK if self.started else Health.DOWN

    async def close(self) -> None:
        self.started = False


def make_worker(redis: FakeRedis, name: str, engine: Engine, *,
                config: QueueConfig = CONFIG, grace_s: float = 5.0) -> tuple[Worker, FakeTransport]:
    transport = FakeTransport(redis, name)
    worker = Worker(config=config, batcher=BATCHER, classes=CLASSES, backends={MODEL: engine},
                    concurrency={MODEL: 1}, transport=transport, clock=redis.clock, wall=Wall(redis.clock),
                    worker_id=name,
                    grace_s=grace_s)
    return worker, transport


def make_gateway(redis: FakeRedis, name: str, *, fallback: WorkQueue | None = None,
                 config: QueueConfig = CONFIG) -> tuple[RedisWorkQueue, FakeTransport, CollectorRegistry]:
    transport = FakeTransport(redis, name)
    registry = CollectorRegistry()
    gateway = RedisWorkQueue(config, [MODEL], transport, clock=redis.clock, wall=Wall(redis.clock),
                             metrics=QueueMetrics(registry), gateway_id=name, fallback=fallback)
    return gateway, transport, registry


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, labels) or 0.0
