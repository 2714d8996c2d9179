"""Fakes for the autoscaler's mechanism: heartbeats, serve flags, worker processes, a provider, signals, and a
trivial policy (the real ones are tested on their own)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import httpx

from peakgate.control.contract import Decision, PolicyContext, ProviderState, Signals
from peakgate.control.providers.base import ProviderError
from peakgate.scaleout.cluster import Counts, Heartbeat, ModelLoad
from peakgate.scaleout.transport import QueueUnreachable

WALL = 1_700_000_000.0


def beat(worker: str, *, pid: int = 0, ready: bool = True, standby: bool = False, warm: bool = False,
         draining: bool = False, cpu: float = 0.0, served_at: float | None = None, error: str | None = None,
         capacity: float = 10.0) -> Heartbeat:
    return Heartbeat(worker=worker, pid=pid, ready=ready, draining=draining, error=error,
                     models={"echo": ModelLoad(capacity, 0.1, 0.0)}, held=0, hold_limit=8, counts=Counts(),
                     at_wall_s=WALL, warm=warm, standby=standby, cpu_utilisation=cpu, first_served_wall_s=served_at)


def signals(at_s: float = 0.0, *, queue: int = 0, replicas: int = 1, rate: float = 0.0,
            capacity: float = 10.0) -> Signals:
    return Signals(at_s=at_s, replicas=replicas, cpu_utilisation=0.1, queue_by_class={"interactive": queue},
                   p95_latency_ms=50.0, in_flight=0, request_rate_per_s=rate, capacity_per_replica_per_s=capacity)


@dataclass
class FakeBeats:
    beats: list[Heartbeat] = field(default_factory=list)
    down: bool = False

    async def heartbeats(self) -> list[Heartbeat]:
        if self.down:
            raise QueueUnreachable("fake redis is down")
        return list(self.beats)


@dataclass
class FakeFlags:
    calls: list[tuple[str, bool]] = field(default_factory=list)

    async def set_serving(self, worker: str, serving: bool) -> None:
        self.calls.append((worker, serving))


@dataclass(eq=False)
class FakeProcess:
    pid: int
    standby: bool
    code: int | None = None
    terminated: bool = False
    killed: bool = False
    exit_on_term: bool = True  # a drain that finishes at once

    def poll(self) -> int | None:
        return self.code

    def terminate(self) -> None:
        self.terminated = True
        if self.exit_on_term:
            self.code = 0

    def kill(self) -> None:
        self.killed = True
        self.code = -9


@dataclass
class FakeSpawner:
    procs: list[FakeProcess] = field(default_factory=list)
    fail: OSError | None = None
    exit_on_term: bool = True

    def __call__(self, name: str, standby: bool) -> FakeProcess:
        if self.fail is not None:
            raise self.fail
        proc = FakeProcess(1000 + len(self.procs), standby, exit_on_term=self.exit_on_term)
        self.procs.append(proc)
        return proc


@dataclass
class FakeProvider:
    state: ProviderState = field(default_factory=lambda: ProviderState(serving=1, starting=0, draining=0))
    scaled: list[int] = field(default_factory=list)
    warm: list[int] = field(default_factory=list)
    failing: bool = False
    calls: int = 0

    def _check(self) -> None:
        self.calls += 1
        if self.failing:
            raise ProviderError("fake API refused")

    async def current(self) -> ProviderState:
        self._check()
        return self.state

    async def scale_to(self, replicas: int) -> ProviderState:
        self._check()
        self.scaled.append(replicas)
        return self.state

    async def keep_warm(self, replicas: int) -> None:
        self._check()
        self.warm.append(replicas)

    async def close(self) -> None:
        return None


@dataclass
class FakeSignals:
    make: Callable[[], Signals] = signals
    down: bool = False

    async def snapshot(self) -> Signals:
        if self.down:
            raise QueueUnreachable("fake redis is down")
        return self.make()


@dataclass
class QueuePolicy:
    """+1 replica while anything waits, else hold; records every context it saw. `broken` raises (a bug)."""

    seen: list[PolicyContext] = field(default_factory=list)
    broken: bool = False

    def initial(self) -> int:
        return 0

    def decide(self, ctx: PolicyContext, state: int) -> tuple[Decision, int]:
        self.seen.append(ctx)
        if self.broken:
            raise ZeroDivisionError("policy bug")
        if ctx.signals.queue_length:
            return Decision(ctx.current_replicas + 1, f"queue {ctx.signals.queue_length} > 0", "queue"), state + 1
        return Decision(ctx.current_replicas, "hold"), state


class Gateways:
    """Each gateway's /metrics as the test sets them; a gateway set to None refuses connections."""

    def __init__(self) -> None:
        self.pages: dict[str, bytes | None] = {}

    def handler(self, request: httpx.Request) -> httpx.Response:
        page = self.pages.get(f"{request.url.scheme}://{request.url.host}:{request.url.port}")
        if page is None:
            raise httpx.ConnectError("refused", request=request)
        return httpx.Response(200, content=page)
