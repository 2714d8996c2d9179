"""Which policy: a config union keyed by `kind` and its factory; also the static-peak baseline.

`kind`: "threshold" (the seed's levels), "kpa" (Knative-style concurrency), "predictive" (forecast upper band),
"static-peak" (a fixed fleet sized for the peak, the baseline the others are costed against).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.contract import Decision, Policy, PolicyContext
from peakgate.control.kpa import KpaConfig, KpaPolicy
from peakgate.control.predictive import PredictiveConfig, PredictivePolicy
from peakgate.control.threshold import ThresholdConfig, ThresholdPolicy
from peakgate.errors import ConfigError


class StaticPeakConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["static-peak"] = "static-peak"
    tick_s: float = Field(default=60.0, gt=0)
    replicas: int | None = Field(default=None, ge=0)  # None: the simulator sizes it for the trace's peak
    target_utilisation: float = Field(default=0.7, gt=0, le=1)  # ... at this share of measured capacity


class StaticPeakPolicy:
    """Always the same fleet; its state is nothing."""

    def __init__(self, config: StaticPeakConfig) -> None:
        if config.replicas is None:
            raise ConfigError("static-peak: set replicas (only the simulator sizes it, from a trace's peak)")
        self.replicas = config.replicas

    def initial(self) -> None:
        return None

    def decide(self, ctx: PolicyContext, state: None) -> tuple[Decision, None]:
        return Decision(self.replicas, f"static: {self.replicas} replicas", rule="static"), None


AnyPolicyConfig = ThresholdConfig | KpaConfig | PredictiveConfig | StaticPeakConfig
PolicyConfig = Annotated[AnyPolicyConfig, Field(discriminator="kind")]
PolicyKind = Literal["threshold", "kpa", "predictive", "static-peak"]


def build_policy(config: AnyPolicyConfig) -> Policy[Any]:
    if isinstance(config, ThresholdConfig):
        return ThresholdPolicy(config)
    if isinstance(config, KpaConfig):
        return KpaPolicy(config)
    if isinstance(config, PredictiveConfig):
        return PredictivePolicy(config)
    return StaticPeakPolicy(config)
