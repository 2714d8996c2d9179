"""Holt-Winters with two seasons (daily and weekly, Taylor's additive double-seasonal form) in plain numpy.

statsmodels would bring scipy, pandas and patsy for one recursion of four lines per minute, and it refits
rather than updating state one observation at a time, which a pure `(state, value) -> state` step needs.

Per minute t, with level l, damped trend b, daily season d (1440 minutes) and weekly season w (10080):

    forecast(h) = l + (phi + ... + phi^h) b + d[t+h-1] + w[t+h-1]
    l' = alpha (y - d - w) + (1 - alpha)(l + phi b)        b' = beta (l' - l) + (1 - beta) phi b
    d' = gamma_d (y - l' - w) + (1 - gamma_d) d            w' = gamma_w (y - l' - d) + (1 - gamma_w) w

The upper band is the forecast plus z standard deviations of the one-step error (an exponentially weighted
mean of squared errors), widened with the horizon as for simple exponential smoothing: sqrt(1 + (h-1) alpha^2).
Seasons are phased by the count of minutes since the first one seen; `initial(history)` estimates them from
whole days and weeks of history, then replays the history through the recursion.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt
from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.forecast import MINUTE_S, Band

DAY_MINUTES = 1440
WEEK_MINUTES = 7 * DAY_MINUTES
Vector = npt.NDArray[np.float64]


class HoltWintersConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["holt-winters"] = "holt-winters"
    alpha: float = Field(default=0.5, gt=0, le=1)  # level
    beta: float = Field(default=0.05, ge=0, le=1)  # trend
    damping: float = Field(default=0.95, gt=0, le=1)  # phi: a ramp's trend fades instead of running away
    gamma_daily: float = Field(default=0.1, ge=0, le=1)
    gamma_weekly: float = Field(default=0.05, ge=0, le=1)
    error_smoothing: float = Field(default=0.05, gt=0, le=1)  # EWMA weight of the squared one-step error
    z: float = Field(default=1.645, ge=0)  # upper band: one-sided 95 % under a normal spread
    horizon_s: float = Field(default=1800.0, ge=MINUTE_S)


@dataclass(frozen=True, slots=True)
class HoltWintersState:
    minute: int  # minutes seen so far: the season phase of the next one
    level: float
    trend: float
    daily: Vector  # never written after construction: each step copies
    weekly: Vector
    error_var: float


class HoltWinters:
    def __init__(self, config: HoltWintersConfig) -> None:
        self.c = config

    def initial(self, history_per_s: Iterable[float] = ()) -> HoltWintersState:
        y = np.fromiter(history_per_s, dtype=np.float64)
        daily, weekly, level = _seasons(y)
        return self._replay(HoltWintersState(0, level, 0.0, daily, weekly, error_var=0.0), y)

    def observe(self, state: HoltWintersState, rate_per_s: float) -> HoltWintersState:
        return self._replay(state, np.array([rate_per_s], dtype=np.float64))

    def predict(self, state: HoltWintersState, steps: int) -> Band:
        c = self.c
        h = np.arange(1, steps + 1, dtype=np.float64)
        damped = h if c.damping == 1 else c.damping * (1 - c.damping**h) / (1 - c.damping)
        phase = state.minute + np.arange(steps)
        seasons = state.daily[phase % DAY_MINUTES] + state.weekly[phase % WEEK_MINUTES]
        mean = np.maximum(state.level + damped * state.trend + seasons, 0.0)
        spread = c.z * math.sqrt(state.error_var) * np.sqrt(1 + (h - 1) * c.alpha**2)
        return tuple(mean.tolist()), tuple((mean + spread).tolist())

    def _replay(self, state: HoltWintersState, values: Vector) -> HoltWintersState:
        """Run the recursion over `values` on private copies of the seasons (the state passed in is untouched)."""
        c = self.c
        daily, weekly = state.daily.copy(), state.weekly.copy()
        level, trend, var, t = state.level, state.trend, state.error_var, state.minute
        for y in values.tolist():
            i, j = t % DAY_MINUTES, t % WEEK_MINUTES
            d, w = daily[i], weekly[j]
            error = y - (level + c.damping * trend + d + w)
            new_level = c.alpha * (y - d - w) + (1 - c.alpha) * (level + c.damping * trend)
            trend = c.beta * (new_level - level) + (1 - c.beta) * c.damping * trend
            level = new_level
            daily[i] = c.gamma_daily * (y - level - w) + (1 - c.gamma_daily) * d
            weekly[j] = c.gamma_weekly * (y - level - d) + (1 - c.gamma_weekly) * w
            var = (1 - c.error_smoothing) * var + c.error_smoothing * error * error
            t += 1
        return HoltWintersState(t, level, trend, daily, weekly, var)


def _seasons(y: Vector) -> tuple[Vector, Vector, float]:
    """Initial daily and weekly seasons and level from whole days (and weeks) of history; zeros without."""
    daily, weekly = np.zeros(DAY_MINUTES), np.zeros(WEEK_MINUTES)
    days = y.size // DAY_MINUTES
    if days == 0:
        return daily, weekly, float(y[0]) if y.size else 0.0
    by_day = y[: days * DAY_MINUTES].reshape(days, DAY_MINUTES)
    level = float(by_day.mean())
    daily = by_day.mean(axis=0) - level
    weeks = y.size // WEEK_MINUTES
    if weeks:
        by_week = y[: weeks * WEEK_MINUTES].reshape(weeks, WEEK_MINUTES) - level - np.tile(daily, 7)
        weekly = by_week.mean(axis=0)
        weekly -= weekly.mean()
    return daily, weekly, level
