"""Priority load shedding (SRE criticality): shed batch first, then document, interactive last.

`decide` is pure: the caller (admission) builds a `ShedContext` from its queue statistics and acts on the
`ShedDecision`, e.g. `raise decision.error()` when `decision.shed`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from peakgate.config import PRIORITY_ORDER, PriorityClass
from peakgate.errors import Overloaded, RateLimited, Rejected
from peakgate.resilience.settings import SheddingConfig

STATUS_CLIENT = 429
STATUS_SERVICE = 503
# Under strict priority a class drains at what the more critical arrivals leave; never counted below this share
# of the total, so a prediction (and its Retry-After) stays finite when those arrivals alone fill the engines.
_MIN_DRAIN_SHARE = 0.05
# A queue whose recent waits reached this share of its deadline is slow: it is then also predicted from its
# own completion rate, which sees what the shared-rate math misses (costlier decoding, a lane of its own).
# Not before: after a quiet spell that rate reads low, and a burst would be refused on it.
_SLOW_WAIT_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class ClassLoad:
    """One class's queue as the scheduler sees it, plus its SLA."""

    depth: int  # requests queued
    oldest_wait_ms: float  # age of the head of the queue
    ewma_wait_ms: float  # smoothed wait of recently dequeued requests
    max_queue_wait_ms: float
    deadline_ms: float
    arrivals_per_s: float = 0.0  # segments admitted per second lately
    completions_per_s: float = 0.0  # segments of this class answered per second lately


@dataclass(frozen=True, slots=True)
class ShedContext:
    request_class: PriorityClass
    service_time_ms: float  # the request's own estimated service time
    classes: Mapping[PriorityClass, ClassLoad]
    drain_per_s: float  # requests the backends complete per second (all classes)
    config: SheddingConfig
    client_share: float = 0.0  # the caller's share of the backlog, 0..1
    deadline_ms: float | None = None  # the request's own deadline when it set one (tighter than its class's)


@dataclass(frozen=True, slots=True)
class ShedDecision:
    shed: bool
    status: int | None  # 429 or 503 when shed
    retry_after_s: float | None  # when shed: predicted drain time, never 0
    reason: str
    predicted_wait_ms: float
    starved: bool = False  # shed because more critical arrivals take the engines: queued work of it starves too
    # Shed as too late for its deadline by its own class's measured drain rate (segments/s): queued work of it
    # that cannot make its deadline at that rate is doomed too.
    late_drain_per_s: float | None = None
    # Nothing queued at or above the request's class: the prediction rests on past waits alone (the case a
    # probe exists for, as after a surge that was shed to the last request).
    stale: bool = False

    def error(self) -> Rejected:
        """The exception admission raises for a shed request."""
        cls = RateLimited if self.status == STATUS_CLIENT else Overloaded
        return cls(f"load shed: {self.reason}", retry_after_s=self.retry_after_s)


def _ahead(ctx: ShedContext, cls: PriorityClass) -> int:
    # Strict priority: a request waits behind its own class and every more critical one.
    rank = PRIORITY_ORDER.index(cls)
    return sum(ctx.classes[c].depth for c in PRIORITY_ORDER[: rank + 1] if c in ctx.classes)


def predicted_wait_ms(ctx: ShedContext, cls: PriorityClass) -> float:
    """Wait of a request of `cls` arriving now: the worse of the queue-math and the observed estimate."""
    load = ctx.classes.get(cls)
    observed = max(load.ewma_wait_ms, load.oldest_wait_ms) if load is not None else 0.0
    ahead = _ahead(ctx, cls)
    if ahead == 0:
        return observed
    if ctx.drain_per_s <= 0:
        # Nothing completed in the drain window (cold start, or after idling): no rate to divide by, and
        # shedding on a guess would refuse the first burst; the observed waits are the evidence there is.
        return observed
    predicted = max(observed, ahead / _class_drain_per_s(ctx, cls) * 1000.0)
    slow = load is not None and load.ewma_wait_ms >= _SLOW_WAIT_SHARE * (_deadline_ms(ctx, cls) or math.inf)
    if slow and load is not None and load.completions_per_s > 0:
        predicted = max(predicted, load.depth / load.completions_per_s * 1000.0)
    return predicted


def _deadline_ms(ctx: ShedContext, cls: PriorityClass) -> float | None:
    """The class's deadline, or the request's own when it is of `cls` and set a tighter one."""
    load = ctx.classes.get(cls)
    deadline_ms = load.deadline_ms if load is not None else None
    if cls == ctx.request_class and ctx.deadline_ms is not None:
        deadline_ms = min(ctx.deadline_ms, deadline_ms) if deadline_ms is not None else ctx.deadline_ms
    return deadline_ms


def _usable_ms(ctx: ShedContext, cls: PriorityClass) -> float:
    """The wait a request of `cls` may be admitted for: its deadline, less headroom below the top class."""
    deadline_ms = _deadline_ms(ctx, cls)
    if deadline_ms is None:
        return math.inf
    return deadline_ms if cls == PRIORITY_ORDER[0] else deadline_ms * ctx.config.deadline_headroom


def _late(ctx: ShedContext, cls: PriorityClass, wait_ms: float) -> bool:
    # Queued past its own deadline a request would only be dropped later, after holding a queue slot (and
    # perhaps after part of it ran): a 503 with Retry-After now serves the client better.
    return wait_ms + ctx.service_time_ms > _usable_ms(ctx, cls)


def _starved(ctx: ShedContext, cls: PriorityClass) -> bool:
    """More critical arrivals take (nearly) all the engines: admitted now, `cls` work would wait, then expire."""
    return cls != PRIORITY_ORDER[0] and ctx.drain_per_s > 0 and (
        _class_drain_per_s(ctx, cls) <= ctx.drain_per_s * _MIN_DRAIN_SHARE)


def _class_drain_per_s(ctx: ShedContext, cls: PriorityClass) -> float:
    """What the engines have left for `cls`: more critical work arriving meanwhile goes first (bench.overload:
    batch work admitted on the total rate waited out its whole deadline behind interactive arrivals)."""
    above = PRIORITY_ORDER[: PRIORITY_ORDER.index(cls)]
    taken = sum(ctx.classes[c].arrivals_per_s for c in above if c in ctx.classes)
    return max(ctx.drain_per_s - taken, ctx.drain_per_s * _MIN_DRAIN_SHARE)


def retry_after_s(ctx: ShedContext) -> float:
    """The request's predicted wait (the drain time of the work ahead of it), clamped; monotone, never 0."""
    cfg = ctx.config
    wait_s = predicted_wait_ms(ctx, ctx.request_class) / 1000.0
    return min(cfg.max_retry_after_s, max(cfg.min_retry_after_s, wait_s))


def _protect_fraction(cls: PriorityClass, config: SheddingConfig) -> float | None:
    if cls == "batch":
        return config.batch_protect_fraction
    if cls == "document":
        return config.document_protect_fraction
    return None


def _own_reason(ctx: ShedContext, cls: PriorityClass) -> str | None:
    """Why a request of `cls` would be shed on its own class's numbers, or None."""
    load = ctx.classes.get(cls)
    wait_ms = predicted_wait_ms(ctx, cls)
    if _late(ctx, cls, wait_ms):
        usable_ms = _usable_ms(ctx, cls)
        return f"{cls} predicted wait {wait_ms:.0f} ms + service would pass {usable_ms:.0f} ms of its deadline"
    fraction = _protect_fraction(cls, ctx.config)
    if fraction is None:
        return None  # interactive: only its own deadline sheds it
    if _starved(ctx, cls):
        return f"{cls} starved: more critical work arrives as fast as the engines drain"
    if load is not None and wait_ms > load.max_queue_wait_ms:
        return f"{cls} predicted wait {wait_ms:.0f} ms over its {load.max_queue_wait_ms:.0f} ms budget"
    top = ctx.classes.get("interactive")
    if top is not None:
        pressure = predicted_wait_ms(ctx, "interactive") / top.max_queue_wait_ms
        if pressure >= fraction:
            return f"protecting interactive (wait at {pressure:.0%} of budget)"
    return None


def _shed_reason(ctx: ShedContext) -> str | None:
    # A class is never admitted while a more critical one is being shed: check the request's class, then upwards
    # (the request's own service time stands in for the higher classes'; it only matters near a deadline).
    rank = PRIORITY_ORDER.index(ctx.request_class)
    for cls in reversed(PRIORITY_ORDER[: rank + 1]):
        reason = _own_reason(ctx, cls)
        if reason is not None:
            return reason if cls == ctx.request_class else f"{cls} is being shed: {reason}"
    return None


def decide(ctx: ShedContext) -> ShedDecision:
    wait_ms = predicted_wait_ms(ctx, ctx.request_class)
    reason = _shed_reason(ctx)
    if reason is None:
        return ShedDecision(False, None, None, "admitted", wait_ms)
    status = STATUS_CLIENT if ctx.client_share >= ctx.config.client_share_for_429 else STATUS_SERVICE
    load = ctx.classes.get(ctx.request_class)
    late = (ctx.request_class != PRIORITY_ORDER[0] and _late(ctx, ctx.request_class, wait_ms)
            and load is not None and load.completions_per_s > 0)
    # A class below a starved one is starved too: it drains at most what that one leaves.
    return ShedDecision(True, status, retry_after_s(ctx), reason, wait_ms, starved=_starved(ctx, ctx.request_class),
                        late_drain_per_s=load.completions_per_s if late and load is not None else None,
                        stale=_ahead(ctx, ctx.request_class) == 0)
