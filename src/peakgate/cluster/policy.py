"""Which cluster serves a request, and which gateway in it: pure functions over frozen snapshots.

`choose(ctx, sticky) -> (decision, sticky)`: the tenant's sticky cluster while it is healthy and under
`spill_load`; else the preferred cluster (region header, client address, default) while it is; else the first
of its fallbacks, in order, that is; else the least-loaded healthy one among them (a gateway past its limit
still sheds with its own 429/503); with none healthy, a refusal saying when to retry. Traffic only ever goes
to the preferred cluster or its fallbacks, so a fallback list can keep data in a jurisdiction.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class UpstreamView:
    up: bool  # health checks (with hysteresis) say the gateway is alive
    ready: bool  # its last /readyz answered 200: warm and not overloaded
    inflight: int  # requests this router has open to it
    max_inflight: int


@dataclass(frozen=True, slots=True)
class ClusterView:
    name: str
    healthy: bool
    load: float  # 0 idle, 1 full (or every live gateway not ready)
    spill_order: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class RouteContext:
    clusters: Mapping[str, ClusterView]
    preferred: str
    spill_load: float
    retry_after_s: float  # what a refusal tells the client: the next health check may find a cluster up


@dataclass(frozen=True, slots=True)
class Route:
    cluster: str
    spilled_from: str | None = None  # the preferred cluster, when this is another one


@dataclass(frozen=True, slots=True)
class NoRoute:
    reason: str
    retry_after_s: float


Decision = Route | NoRoute


def cluster_health(upstreams: Sequence[UpstreamView]) -> tuple[bool, float]:
    """(healthy, load): healthy while one gateway is up; load is what this router has in flight to the ready
    gateways over their limits, and 1.0 when none is ready (a gateway's 503 /readyz means it is overloaded
    or still warming)."""
    live = [u for u in upstreams if u.up]
    ready = [u for u in live if u.ready]
    if not ready:
        return bool(live), 1.0
    return True, sum(u.inflight for u in ready) / sum(u.max_inflight for u in ready)


def pick_upstream(upstreams: Sequence[UpstreamView], turn: int) -> int | None:
    """The index of the gateway to send to: the least loaded ready one (any live one when none is ready),
    ties taken in turn from `turn` so an idle cluster still spreads its traffic; None when none is up."""
    live = [i for i, u in enumerate(upstreams) if u.up]
    candidates = [i for i in live if upstreams[i].ready] or live
    if not candidates:
        return None
    n = len(upstreams)
    return min(candidates, key=lambda i: (upstreams[i].inflight / upstreams[i].max_inflight, (i - turn) % n))


def choose(ctx: RouteContext, sticky: str | None) -> tuple[Decision, str | None]:
    """The decision, and the tenant's sticky cluster afterwards (the one that serves it; kept on a refusal)."""
    names = (ctx.preferred, *ctx.clusters[ctx.preferred].spill_order)
    healthy = [ctx.clusters[n] for n in names if ctx.clusters[n].healthy]
    if not healthy:
        return NoRoute(f"no healthy cluster among {', '.join(names)}", ctx.retry_after_s), sticky
    under = [view for view in healthy if view.load < ctx.spill_load]
    kept = next((view for view in under if view.name == sticky), None)
    target = kept or (under[0] if under else min(healthy, key=lambda view: view.load))
    spilled_from = None if target.name == ctx.preferred else ctx.preferred
    return Route(target.name, spilled_from), target.name
