"""The synthetic holiday trace: weeks of daily and weekly seasonality, then a Spring-Festival-like day.

Every stream follows the same day shape (a morning and an evening peak over a night floor; weekends lower) with
per-minute log-normal noise. On the holiday interactive traffic surges `surge_factor`-fold in `surge_ramp_s` at
`surge_at_s` (20:00, the evening gala), holds, then decays. Backlog (deferrable) jobs are submitted in office
hours on weekdays. The replay runs from `replay_start_s` on the holiday (08:00) for `replay_s`, so it holds the
day's peaks, the surge and the next night's trough. All figures are inputs, not measurements: a test load.
"""

from __future__ import annotations

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.trace import MixEntry, Trace, Vector

DAY_S = 86_400
STEP_S = 60


class HolidayTraceConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    history_days: int = Field(default=14, ge=0)  # two weeks before the holiday: enough for the weekly season
    replay_start_s: float = Field(default=8 * 3600.0, ge=0)  # into the holiday; history before it
    replay_s: float = Field(default=86_400.0, ge=3600)
    interactive_mean_per_s: float = Field(default=900.0, ge=0)  # segments/s, mean over an ordinary weekday
    document_mean_per_s: float = Field(default=250.0, ge=0)
    batch_mean_per_s: float = Field(default=100.0, ge=0)
    deferrable_per_s: float = Field(default=300.0, ge=0)  # while submitted: weekdays 09:00-18:00
    surge_factor: float = Field(default=10.0, ge=1)
    surge_at_s: float = Field(default=20 * 3600.0, ge=0)  # into the holiday (from its midnight)
    surge_ramp_s: float = Field(default=300.0, gt=0)
    surge_hold_s: float = Field(default=2700.0, ge=0)
    surge_decay_s: float = Field(default=3600.0, gt=0)
    noise: float = Field(default=0.05, ge=0)  # sigma of the per-minute log-normal factor
    seed: int = 7


def day_shape(seconds: Vector) -> Vector:
    """Relative load by time of day: a 0.25 night floor, peaks at 10:30 and 20:30; mean 1 over a day."""
    day = np.arange(0, DAY_S, STEP_S, dtype=np.float64)
    return _peaks(seconds) / float(np.mean(_peaks(day)))


def _peaks(seconds: Vector) -> Vector:
    hours = (seconds % DAY_S) / 3600.0
    return 0.25 + 1.2 * np.exp(-(((hours - 10.5) / 3.5) ** 2)) + np.exp(-(((hours - 20.5) / 2.5) ** 2))


def surge(seconds: Vector, config: HolidayTraceConfig) -> Vector:
    """The multiplier on interactive traffic: 1, ramping to `surge_factor`, holding, decaying back."""
    t = seconds - config.surge_at_s
    ramp = np.clip(t / config.surge_ramp_s, 0.0, 1.0)
    decay = np.clip((t - config.surge_ramp_s - config.surge_hold_s) / config.surge_decay_s, 0.0, 1.0)
    return 1.0 + (config.surge_factor - 1.0) * ramp * (1.0 - decay)


def holiday_trace(config: HolidayTraceConfig) -> Trace:
    holiday_s = config.history_days * DAY_S
    replay_from = int((holiday_s + config.replay_start_s) // STEP_S)
    seconds = np.arange(0, replay_from * STEP_S + config.replay_s, STEP_S, dtype=np.float64)
    weekday = (seconds // DAY_S) % 7  # day 0 is a Monday
    base = day_shape(seconds) * np.where(weekday >= 5, 0.75, 1.0)
    noise = np.random.default_rng(config.seed).lognormal(0.0, config.noise, (4, seconds.size))
    replayed = seconds - holiday_s
    surge_ = surge(replayed, config)
    office = ((seconds % DAY_S) >= 9 * 3600) & ((seconds % DAY_S) < 18 * 3600) & (weekday < 5)
    rates = {
        "interactive": config.interactive_mean_per_s * base * noise[0] * np.where(replayed >= 0, surge_, 1.0),
        "document": config.document_mean_per_s * base * noise[1],
        "batch": config.batch_mean_per_s * base * noise[2],
        "deferrable": config.deferrable_per_s * office * noise[3],
    }
    return Trace("holiday", STEP_S, rates, replay_from_step=replay_from, mix=_mix())


def _mix() -> dict[str, tuple[MixEntry, ...]]:
    """Who sends what on the holiday trace (for the cost attribution table): an illustrative split."""
    return {
        "interactive": (MixEntry("tiny", "consumer-app", "/v1/translate/stream", 0.5),
                        MixEntry("medium", "consumer-app", "/v2/translate", 0.3),
                        MixEntry("medium", "partner", "/translate", 0.2)),
        "document": (MixEntry("large", "enterprise", "/v2/document", 1.0),),
        "batch": (MixEntry("medium", "enterprise", "/v1/jobs", 1.0),),
        "deferrable": (MixEntry("medium", "archive", "/v1/jobs", 1.0),),
    }
