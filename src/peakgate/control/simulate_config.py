"""The simulator's configuration: one file (TOML or JSON) for every knob of `peakgate simulate`.

Errors name the field: `simulate config x.toml: clamps.max_replicas: Input should be greater than or equal to 1`.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from peakgate.config import PriorityClass
from peakgate.control.backlog import BacklogConfig
from peakgate.control.clamps import ClampConfig
from peakgate.control.cost import CostConfig
from peakgate.control.forecast_config import ForecastConfig
from peakgate.control.forecast_holtwinters import HoltWintersConfig
from peakgate.control.kpa import KpaConfig
from peakgate.control.policies import StaticPeakConfig
from peakgate.control.predictive import PredictiveConfig
from peakgate.control.threshold import ThresholdConfig
from peakgate.control.trace_holiday import HolidayTraceConfig
from peakgate.errors import ConfigError


class FleetConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # None: the capacity profile's measured figure, else 20 s cold and 2 s warm.
    cold_start_s: float | None = Field(default=None, gt=0)  # scale-up decision to a new replica serving
    warm_promotion_s: float | None = Field(default=None, gt=0)  # a standby replica (models loaded) to serving
    warm_pool: int = Field(default=2, ge=0)  # standby replicas kept, paid, on the burst market
    drain_s: float = Field(default=5.0, ge=0)  # a scaled-in replica finishes what it holds (still paid)
    spot_interruptions_per_hour: float = Field(default=0.05, ge=0)  # per serving spot replica
    spot_notice_s: float = Field(default=120.0, ge=0)  # the provider starts the replacement on the notice


_CLASS_WAITS_MS: dict[PriorityClass, float] = {"interactive": 500.0, "document": 10_000.0, "batch": 120_000.0}


class SloConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # The classes' max_queue_wait_ms defaults (peakgate.config); backlog jobs have their deadline instead.
    max_queue_wait_ms: dict[PriorityClass, float] = Field(default_factory=lambda: dict(_CLASS_WAITS_MS))
    minute_quantile: float = Field(default=0.99, gt=0, le=1)  # a minute meets its SLO when this share did


class SimulationConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    step_s: float = Field(default=1.0, gt=0, le=10)
    seed: int = 1
    profile: str = "cpu-int8"  # profiles/<name>.json, or a path
    clamps: ClampConfig = ClampConfig(min_replicas=2, max_replicas=64)
    forecast: ForecastConfig = HoltWintersConfig()
    threshold: ThresholdConfig = ThresholdConfig()
    kpa: KpaConfig = KpaConfig()
    predictive: PredictiveConfig = PredictiveConfig()
    static_peak: StaticPeakConfig = StaticPeakConfig()
    cost: CostConfig = CostConfig()
    fleet: FleetConfig = FleetConfig()
    slo: SloConfig = SloConfig()
    backlog: BacklogConfig = BacklogConfig()
    holiday: HolidayTraceConfig = HolidayTraceConfig()


def describe_errors(exc: ValidationError) -> str:
    """`a.b.c: message; ...`: each failing field by its dotted path."""
    return "; ".join(f"{'.'.join(str(p) for p in err['loc']) or '(top)'}: {err['msg']}" for err in exc.errors())


def load_simulation_config(path: Path | None) -> SimulationConfig:
    if path is None:
        return SimulationConfig()
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except OSError as exc:
        raise ConfigError(f"simulate config {path}: cannot read: {exc}") from exc
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"simulate config {path}: not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}") from exc
    try:
        return SimulationConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"simulate config {path}: {describe_errors(exc)}") from exc
