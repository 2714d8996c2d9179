"""The simulator's provider: replicas starting (cold or promoted from the warm pool), serving, leaving, and
the market each one is paid on.

The first `baseline` replicas are on-demand, the rest run on the burst market (`cost.burst_market`). Scale-up
promotes ready warm replicas first (`warm_promotion_s`), then cold-starts the rest (`cold_start_s`), and the
pool refills by cold starts. Scale-in cancels the newest starting replicas first, then drains serving ones,
burst market first; a draining replica is paid for `drain_s` more. A serving spot replica is interrupted at
`spot_interruptions_per_hour`: the provider starts its replacement on the notice and the old one serves until
the notice ends. Everything runs on the caller's clock; randomness comes from the caller's generator.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from peakgate.control.cost import MARKETS, Market

Pending = list[tuple[float, Market]]  # (when it happens, market)


@dataclass(frozen=True, slots=True)
class FleetTimes:
    cold_start_s: float
    warm_promotion_s: float
    warm_pool: int
    drain_s: float
    spot_interruptions_per_hour: float
    spot_notice_s: float


@dataclass(slots=True)
class Fleet:
    times: FleetTimes
    baseline: int
    burst: Market
    rng: np.random.Generator
    serving: dict[Market, int] = field(default_factory=lambda: dict.fromkeys(MARKETS, 0))
    starting: Pending = field(default_factory=list)  # ready at
    leaving: Pending = field(default_factory=list)  # interrupted: serving until
    draining: Pending = field(default_factory=list)  # gone at
    warm: Pending = field(default_factory=list)  # standby, ready (models loaded) at
    interruptions: int = 0

    @property
    def serving_total(self) -> int:
        return self.serving["on-demand"] + self.serving["spot"]

    def current(self) -> int:
        """What a policy sees as the provider's replicas: serving (not leaving) plus starting."""
        return self.serving_total - len(self.leaving) + len(self.starting)

    def billed(self) -> dict[Market, int]:
        out = dict(self.serving)
        for _at, market in (*self.starting, *self.draining, *self.warm):
            out[market] += 1
        return out

    def start(self, replicas: int, now: float) -> None:
        """Begin with `replicas` serving and a full warm pool (the state before the replayed window)."""
        for _ in range(replicas):
            self.serving[self._market_for_new()] += 1
        self._refill(now, ready_at=now)

    def scale_to(self, desired: int, now: float) -> None:
        delta = desired - self.current()
        for _ in range(max(0, delta)):
            ready = [w for w in self.warm if w[0] <= now]
            if ready:
                self.warm.remove(ready[0])
                self.starting.append((now + self.times.warm_promotion_s, ready[0][1]))
            else:
                self.starting.append((now + self.times.cold_start_s, self._market_for_new()))
        for _ in range(max(0, -delta)):
            self._remove_one(now)
        self._refill(now, ready_at=now + self.times.cold_start_s)

    def advance(self, now: float, dt: float) -> None:
        """Replicas that became ready, left or finished draining by `now`; spot interruptions over `dt`."""
        for _at, market in _due(self.starting, now):
            self.serving[market] += 1
        for _at, market in _due(self.leaving, now):
            self.serving[market] -= 1
        _due(self.draining, now)
        spot = self._staying("spot")
        if spot > 0 and self.times.spot_interruptions_per_hour > 0:
            hits = int(self.rng.binomial(spot, min(1.0, self.times.spot_interruptions_per_hour * dt / 3600.0)))
            for _ in range(hits):
                self.interruptions += 1
                self.leaving.append((now + self.times.spot_notice_s, "spot"))
                self.starting.append((now + self.times.cold_start_s, "spot"))

    def _market_for_new(self) -> Market:
        on_demand = self.serving["on-demand"] + sum(1 for _at, m in self.starting if m == "on-demand")
        return "on-demand" if on_demand < self.baseline else self.burst

    def _remove_one(self, now: float) -> None:
        if self.starting:
            self.starting.remove(max(self.starting))  # the newest request
            return
        market: Market = "spot" if self._staying("spot") > 0 else "on-demand"
        if self._staying(market) > 0:
            self.serving[market] -= 1
            self.draining.append((now + self.times.drain_s, market))

    def _staying(self, market: Market) -> int:
        """Serving replicas of `market` that are not leaving on an interruption notice."""
        return self.serving[market] - sum(1 for _at, m in self.leaving if m == market)

    def _refill(self, now: float, ready_at: float) -> None:
        while len(self.warm) < self.times.warm_pool:
            self.warm.append((ready_at, self.burst))


def _due(pending: Pending, now: float) -> Pending:
    """Remove and return the entries due by `now`."""
    due = [p for p in pending if p[0] <= now]
    if due:
        pending[:] = [p for p in pending if p[0] > now]
    return due
