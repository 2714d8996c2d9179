"""Is now a forecast trough? The live off-peak decision for deferrable jobs (the seed's 低峰时段处理历史积压任务).

Pure: `decide(config, signals, forecast, state) -> (TroughDecision, new state)`. Now is a trough when the demand
expected from now over the next `horizon_s` (the highest of the rate seen now and the forecast's upper band over
those steps; the forecast's own horizon bounds it) is at most `trough_fraction` of the recent peak: the highest
request rate seen over the last `peak_window_s` (a day: one daily cycle's peak). The upper band, not the mean,
so that backlog is not released just before a rise the model half expects. Until `min_history_s` of rates has
been seen the peak means little, and no trough is vouched for. The peak is kept as the maxima of 24 buckets of
`peak_window_s / 24` each, so the state stays small whatever the window.

The simulator's backlog gate (`backlog.in_trough`) ranks the current minute within a day-long forecast; the
live loop's forecasters look minutes ahead (`horizon_s` of the forecast config), so the live test compares
with the observed peak instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.contract import Forecast, Signals

_BUCKETS = 24


class TroughConfig(BaseModel):
    """`[autoscale.offpeak]`: publishing the trough needs a forecaster (`[autoscale.forecast]`)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    publish: bool = True  # with a forecaster, publish it for the gateways' job runners (`jobs.off_peak_source`)
    horizon_s: float = Field(default=1800.0, ge=60)  # demand must stay low this far ahead
    trough_fraction: float = Field(default=0.5, gt=0, le=1)  # of the recent peak
    peak_window_s: float = Field(default=86_400.0, ge=3600)
    min_history_s: float = Field(default=3600.0, ge=0)
    ttl_ticks: int = Field(default=3, ge=1)  # the published notice outlives this many missed ticks, no more


@dataclass(frozen=True, slots=True)
class TroughState:
    first_at_s: float | None = None  # the first rate seen
    peaks: tuple[tuple[int, float], ...] = ()  # (bucket index, highest rate in it), oldest first


@dataclass(frozen=True, slots=True)
class TroughDecision:
    off_peak: bool
    expected_per_s: float
    peak_per_s: float
    threshold_per_s: float
    reason: str


def decide(config: TroughConfig, signals: Signals, forecast: Forecast,
           state: TroughState) -> tuple[TroughDecision, TroughState]:
    state = _seen(config, state, signals.at_s, signals.request_rate_per_s)
    peak = max(rate for _, rate in state.peaks)
    steps = max(1, math.ceil(config.horizon_s / forecast.step_s))
    expected = max((signals.request_rate_per_s, *forecast.upper_per_s[:steps]))
    threshold = config.trough_fraction * peak
    seen_s = signals.at_s - (state.first_at_s if state.first_at_s is not None else signals.at_s)
    if seen_s < config.min_history_s:
        reason = f"{seen_s:.0f} s of history, {config.min_history_s:.0f} s needed before a trough is vouched for"
        return TroughDecision(False, expected, peak, threshold, reason), state
    off_peak = expected <= threshold
    relation = "<=" if off_peak else ">"
    reason = (f"expected {expected:.1f}/s {relation} {config.trough_fraction:.0%} of the peak {peak:.1f}/s "
              f"over {config.peak_window_s:.0f} s")
    return TroughDecision(off_peak, expected, peak, threshold, reason), state


def _seen(config: TroughConfig, state: TroughState, at_s: float, rate_per_s: float) -> TroughState:
    """`state` with `rate_per_s` seen at `at_s`; buckets older than the peak window dropped."""
    bucket_s = config.peak_window_s / _BUCKETS
    index = int(at_s // bucket_s)
    kept = [(i, rate) for i, rate in state.peaks if index - _BUCKETS < i < index]
    current = max((rate for i, rate in state.peaks if i == index), default=rate_per_s)
    kept.append((index, max(current, rate_per_s)))
    first = state.first_at_s if state.first_at_s is not None else at_s
    return TroughState(first, tuple(kept))
