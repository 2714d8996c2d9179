"""The sliding-window forecaster: a recency-weighted average of the last minutes, with an upper band."""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.forecast import MINUTE_S, Band


class WindowConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["window"] = "window"
    window_s: float = Field(default=600.0, ge=MINUTE_S)  # whole minutes; the last 10 by default
    z: float = Field(default=1.645, ge=0)  # upper band: one-sided 95 % under a normal spread
    horizon_s: float = Field(default=1800.0, ge=MINUTE_S)


@dataclass(frozen=True, slots=True)
class WindowState:
    recent: tuple[float, ...] = ()  # the last `window` minutes, oldest first


class WindowAverage:
    """Weighted average of the last minutes (weight grows linearly with recency), flat over the horizon; the
    upper band is the mean plus `z` weighted standard deviations of the window."""

    def __init__(self, config: WindowConfig) -> None:
        self.window = int(config.window_s // MINUTE_S)
        self.z = config.z

    def initial(self, history_per_s: Iterable[float] = ()) -> WindowState:
        return WindowState(tuple(float(v) for v in history_per_s)[-self.window :])

    def observe(self, state: WindowState, rate_per_s: float) -> WindowState:
        return WindowState((*state.recent, rate_per_s)[-self.window :])

    def predict(self, state: WindowState, steps: int) -> Band:
        if not state.recent:
            return (0.0,) * steps, (0.0,) * steps
        mean, std = _weighted_mean_std(state.recent)
        return (mean,) * steps, (mean + self.z * std,) * steps


def _weighted_mean_std(values: Sequence[float]) -> tuple[float, float]:
    weights = range(1, len(values) + 1)
    total = sum(weights)
    mean = sum(w * v for w, v in zip(weights, values, strict=True)) / total
    var = sum(w * (v - mean) ** 2 for w, v in zip(weights, values, strict=True)) / total
    return mean, math.sqrt(var)
