"""The control loop's seams: what one tick reads, what a policy answers, what a provider does.

`metrics snapshot (Signals) → forecaster (Forecast) → tick observers (cost, off-peak) → policy (Decision, new
state) → clamps → provider (+ warm pool)`. Policies and forecasters are pure: a frozen context in, a decision and a
new state out; they never sleep, read a clock or do I/O. The mechanism (`control.loop`) builds the context, clamps
and applies the decision through a `Provider`, and logs and counts every decision with its reason. The request
path never calls any of it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol, TypeVar

from peakgate.control.cost import CostKey

if TYPE_CHECKING:  # annotations only: `peakgate.config` holds `autoscale` settings that import these seams
    from peakgate.config import PriorityClass

S = TypeVar("S")


@dataclass(frozen=True, slots=True)
class Signals:
    """One tick's frozen snapshot of what gateways and workers already measure (shared queue, heartbeats,
    Prometheus), never a process's private state."""

    at_s: float  # the control loop's clock at the snapshot
    replicas: int  # serving replicas (ready, not draining)
    cpu_utilisation: float  # 0..1, mean over serving replicas
    queue_by_class: Mapping[PriorityClass, int]  # entries waiting (not yet taken by a worker)
    p95_latency_ms: float
    in_flight: int  # requests being served now, all replicas
    request_rate_per_s: float  # arrivals over the last minute
    gpu_memory_utilisation: float | None = None  # 0..1 when NVML sees a GPU, else None
    capacity_per_replica_per_s: float = 0.0  # requests one replica completes per second while busy (measured)
    # Source characters engines translated since the previous snapshot, by (model, tier, tenant, endpoint)
    engine_chars_by_key: Mapping[CostKey, float] = field(default_factory=dict)

    @property
    def queue_length(self) -> int:
        return sum(self.queue_by_class.values())


@dataclass(frozen=True, slots=True)
class Forecast:
    """Expected arrivals (requests/s) over the next steps, with an upper band (e.g. the 95 % bound)."""

    at_s: float
    step_s: float
    mean_per_s: tuple[float, ...]
    upper_per_s: tuple[float, ...]

    def upper_at(self, ahead_s: float) -> float:
        """The upper band `ahead_s` from now (the last step beyond the horizon)."""
        if not self.upper_per_s:
            return 0.0
        index = min(len(self.upper_per_s) - 1, max(0, int(ahead_s // self.step_s)))
        return self.upper_per_s[index]


@dataclass(frozen=True, slots=True)
class PolicyContext:
    signals: Signals
    current_replicas: int  # what the provider has now (serving + starting)
    forecast: Forecast | None = None
    startup_s: float = 0.0  # measured time from a scale-up decision to a replica serving (cold start)


@dataclass(frozen=True, slots=True)
class Decision:
    desired_replicas: int
    reason: str  # which rule or level fired, for the log and the decisions metric ("hold" when none)
    rule: str = "hold"  # a short, bounded label for metrics: e.g. "cpu", "gpu_memory", "queue", "scale_in"


class Policy(Protocol[S]):
    """A pure scaling policy: `(context, state) -> (decision, new state)`; `initial()` is its first state."""

    def initial(self) -> S: ...

    def decide(self, ctx: PolicyContext, state: S) -> tuple[Decision, S]: ...


@dataclass(frozen=True, slots=True)
class ReplicaEvent:
    """A provider's lifecycle event: a replica requested, serving, draining, gone or failed to start."""

    replica: str
    kind: str  # "requested" | "serving" | "draining" | "gone" | "failed" | "promoted"
    at_s: float
    detail: str = ""


@dataclass(frozen=True, slots=True)
class ProviderState:
    serving: int
    starting: int
    draining: int
    warm: int = 0  # standby replicas (models loaded, not taking traffic)
    events: tuple[ReplicaEvent, ...] = field(default=())


class Provider(Protocol):
    """Where replicas come from: local `peakgate worker` processes, or a Kubernetes Deployment."""

    async def current(self) -> ProviderState: ...

    async def scale_to(self, replicas: int) -> ProviderState:
        """Ask for `replicas` serving replicas (scale-in drains: accepted work is finished, never dropped)."""
        ...

    async def close(self) -> None: ...


@dataclass(frozen=True, slots=True)
class Tick:
    """What a tick observer is told: the tick's signals and forecast, and the fleet since the previous tick."""

    signals: Signals
    forecast: Forecast | None
    fleet: ProviderState | None  # as the provider last reported it (after the last scaling); None before


class TickObserver(Protocol):
    """Told of every tick that read its signals, before the policy runs, whether or not the provider is reached:
    the live cost meter, the off-peak publisher. A failure is logged and counted under `stage`, never fatal."""

    @property
    def stage(self) -> str: ...

    async def observe(self, tick: Tick) -> None: ...
