"""Clamps between a policy's decision and the provider: hysteresis, step limits, then min/max replicas.

Pure and stateless: `clamp(decision, current, config) -> decision`. The order matters: hysteresis first (a
scale-in too small to be worth it is held), then the step limits, and min/max last so they always hold. A
clamped decision keeps its rule and says what changed it in its reason.
"""

from __future__ import annotations

import math

from pydantic import BaseModel, ConfigDict, Field, model_validator

from peakgate.control.contract import Decision


class ClampConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    min_replicas: int = Field(default=1, ge=0)
    max_replicas: int = Field(default=100, ge=1)
    max_step_up: int | None = Field(default=None, ge=1)  # replicas added per decision at most
    max_step_down: int | None = Field(default=None, ge=1)  # replicas removed per decision at most
    # Scale in only when the decision removes at least this fraction of the current replicas (and at least one).
    scale_in_hysteresis: float = Field(default=0.0, ge=0, lt=1)

    @model_validator(mode="after")
    def _ordered(self) -> ClampConfig:
        if self.min_replicas > self.max_replicas:
            raise ValueError(f"min_replicas ({self.min_replicas}) is above max_replicas ({self.max_replicas})")
        return self


def clamp(decision: Decision, current: int, config: ClampConfig) -> Decision:
    desired, notes = decision.desired_replicas, []
    if desired < current and current - desired < max(1, math.ceil(config.scale_in_hysteresis * current)):
        desired = current
        notes.append(f"scale-in under the {config.scale_in_hysteresis:g} hysteresis held")
    if config.max_step_up is not None and desired > current + config.max_step_up:
        desired = current + config.max_step_up
        notes.append(f"step limited to +{config.max_step_up}")
    if config.max_step_down is not None and desired < current - config.max_step_down:
        desired = current - config.max_step_down
        notes.append(f"step limited to -{config.max_step_down}")
    bounded = min(max(desired, config.min_replicas), config.max_replicas)
    if bounded != desired:
        notes.append(f"bounded to [{config.min_replicas}, {config.max_replicas}]")
    if not notes:
        return decision
    return Decision(bounded, f"{decision.reason}; {'; '.join(notes)}", decision.rule)
