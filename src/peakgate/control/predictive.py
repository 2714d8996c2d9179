"""The predictive policy: provision now for the forecaster's upper band one start-up time ahead.

Replicas asked for now serve from `startup_s` on, and the next decision's from one tick later; so the policy
takes the highest upper band between now and `startup_s + tick_s` ahead. A minute-level forecast cannot see a
surge that starts inside the minute, so the rate observed over the last minute, extrapolated along its slope
over `trend_window_s` to the same point ahead (a rising slope only), is a floor under it. Then it adds what it
takes to drain the queue within `drain_s`, and divides by the measured capacity of one replica at
`target_utilisation`. Scale-out is immediate; scale-in goes only as low as the highest need of the last
`scale_in_delay_s` (no flapping on noise).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.contract import Decision, Forecast, PolicyContext


class PredictiveConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["predictive"] = "predictive"
    tick_s: float = Field(default=10.0, gt=0)
    target_utilisation: float = Field(default=0.7, gt=0, le=1)
    drain_s: float = Field(default=60.0, gt=0)  # clear what is queued within this long, on top of arrivals
    scale_in_delay_s: float = Field(default=600.0, ge=0)
    trend_window_s: float = Field(default=30.0, ge=0)  # slope of the observed rate over this long (0: none)
    # Used when the signals carry no measured capacity (a fresh loop before any replica reported one).
    capacity_per_replica_per_s: float | None = Field(default=None, gt=0)


@dataclass(frozen=True, slots=True)
class PredictiveState:
    needs: tuple[tuple[float, int], ...] = ()  # (at_s, replicas needed) within the scale-in delay
    rates: tuple[tuple[float, float], ...] = ()  # (at_s, observed rate) within the trend window


class PredictivePolicy:
    def __init__(self, config: PredictiveConfig) -> None:
        self.c = config

    def initial(self) -> PredictiveState:
        return PredictiveState()

    def decide(self, ctx: PolicyContext, state: PredictiveState) -> tuple[Decision, PredictiveState]:
        c, signals = self.c, ctx.signals
        capacity = signals.capacity_per_replica_per_s or c.capacity_per_replica_per_s
        if not capacity:
            return Decision(ctx.current_replicas, "hold: no measured capacity per replica"), state
        now, observed = signals.at_s, signals.request_rate_per_s
        rates = (*(r for r in state.rates if r[0] >= now - c.trend_window_s), (now, observed))
        ahead = self._band_ahead(ctx.forecast, now, ctx.startup_s)
        trend = _extrapolate(rates, lead_s=30.0 + ctx.startup_s + c.tick_s)  # 30 s: the window's mid-point lags
        backlog = signals.queue_length / c.drain_s
        need = math.ceil((max(ahead, trend) + backlog) / (capacity * c.target_utilisation))
        needs = (*(n for n in state.needs if n[0] > now - c.scale_in_delay_s), (now, need))
        desired = max(n for _, n in needs)
        rule = "forecast" if ahead >= trend else "observed"
        reason = (f"{rule}: upper band {ahead:.1f}/s ahead, observed {observed:.1f}/s (trend {trend:.1f}/s), "
                  f"queue {backlog:.1f}/s -> {need} at {capacity:.0f}/s x {c.target_utilisation:g}"
                  + (f", held at {desired} (scale-in delay)" if desired > need else ""))
        return Decision(desired, reason, rule=rule), PredictiveState(needs, rates)

    def _band_ahead(self, forecast: Forecast | None, now: float, startup_s: float) -> float:
        """The highest upper band from now until `startup_s + tick_s` from now (0 without a forecast)."""
        if forecast is None or not forecast.upper_per_s:
            return 0.0
        start = max(0.0, now - forecast.at_s)
        steps = range(int(start // forecast.step_s), int((start + startup_s + self.c.tick_s) // forecast.step_s) + 1)
        return max(forecast.upper_at(i * forecast.step_s) for i in steps)


def _extrapolate(rates: tuple[tuple[float, float], ...], lead_s: float) -> float:
    """The latest observed rate, moved `lead_s` along its rising slope since the window's oldest sample."""
    (then, first), (now, last) = rates[0], rates[-1]
    slope = (last - first) / (now - then) if now > then else 0.0
    return last + max(0.0, slope) * lead_s
