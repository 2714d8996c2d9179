"""Off-peak backlog (the seed's 低峰时段处理历史积压任务，平滑成本峰值): deferrable jobs wait for a trough.

Pure: `plan(config, now, forecast, load, floor_capacity) -> Release`. Now is a trough when the forecast for the
current minute is within the lowest `trough_quantile` of the forecast over `horizon_s`; then backlog fills the
spare capacity of the fleet's floor (the minimum replicas, paid for anyway) up to `fill_to_utilisation`. The
floor, not the current fleet: released work raises the load the policies see, so sizing the release on the
current fleet would feed back into growing it. Jobs whose deadline is within `urgent_s` are released whatever
the load, and the policies scale for them like for any other queued work.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.contract import Forecast


class BacklogConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    defer: bool = True  # false: backlog runs as it is submitted (the comparison's baseline)
    deadline_s: float = Field(default=86_400.0, gt=0)  # from submission
    urgent_s: float = Field(default=3_600.0, ge=0)  # release regardless once the deadline is this close
    trough_quantile: float = Field(default=0.25, gt=0, le=1)
    horizon_s: float = Field(default=86_400.0, ge=60)
    fill_to_utilisation: float = Field(default=0.5, gt=0, le=1)  # below the policies' targets: no growth


@dataclass(frozen=True, slots=True)
class Release:
    urgent_before_s: float  # release every job whose deadline is before this
    fill_per_s: float  # and, oldest first, this much more per second of spare capacity
    reason: str


def plan(config: BacklogConfig, now: float, forecast: Forecast | None, load_per_s: float,
         floor_capacity_per_s: float) -> Release:
    urgent = now + config.urgent_s
    if forecast is None or not forecast.mean_per_s:
        return Release(urgent, 0.0, "no forecast: deadlines only")
    horizon = forecast.mean_per_s[: max(1, int(config.horizon_s // forecast.step_s))]
    if not in_trough(horizon, config.trough_quantile):
        return Release(urgent, 0.0, "not a trough")
    spare = max(0.0, config.fill_to_utilisation * floor_capacity_per_s - load_per_s)
    return Release(urgent, spare, f"trough: {spare:.0f}/s spare")


def in_trough(mean_per_s: Sequence[float], quantile: float) -> bool:
    """Whether the first step's forecast is within the lowest `quantile` of the whole horizon."""
    return mean_per_s[0] <= float(np.quantile(np.asarray(mean_per_s), quantile))
