"""SLO configuration (`[slo]`): availability and latency objectives per request class, over one budget period.

Each class may set an availability objective (the share of its requests the service answers rather than failing
or refusing for overload) and a latency objective (the share of its served requests answered within
`latency_threshold_ms`); None turns one off. Every SLO is named `{class}_{kind}`, e.g. `interactive_latency`:
that name is the `slo` label of every SLO metric, recording rule and alert.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

SloKind = Literal["availability", "latency"]
_CLASSES = ("interactive", "document", "batch")  # config.PRIORITY_ORDER (config imports this module)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ClassSlo(_Frozen):
    availability: float | None = Field(default=0.999, gt=0, lt=1)
    latency: float | None = Field(default=0.99, gt=0, lt=1)
    latency_threshold_ms: float = Field(default=300.0, gt=0)


def _default_classes() -> dict[str, ClassSlo]:
    return {
        # Interactive: a person waits on the answer (a UI string, a chat line).
        "interactive": ClassSlo(),
        # Documents are read once the whole file is back: seconds, not a UI's hundreds of milliseconds.
        "document": ClassSlo(latency_threshold_ms=5_000.0),
        # Batch work runs as jobs, paced and deferred on purpose: only its availability is promised, and a
        # looser one, since the ladder refuses it first (CACHE_ONLY) to keep the other classes within theirs.
        "batch": ClassSlo(availability=0.99, latency=None),
    }


@dataclass(frozen=True, slots=True)
class SloDefinition:
    name: str  # `{class}_{kind}`
    priority: str  # the request class
    kind: SloKind
    objective: float  # the share of good events promised, e.g. 0.999
    threshold_s: float | None  # latency SLOs: a served request is good within this


class SloConfig(_Frozen):
    # The error budget's period: what `peakgate_slo_error_budget_remaining` spends and what the alert pairs'
    # burn factors are derived from (30 days gives the SRE workbook's 14.4x, 6x and 1x). At least the ticket
    # pair's 3-day window.
    period_days: int = Field(default=30, ge=3)
    interactive: ClassSlo = _default_classes()["interactive"]
    document: ClassSlo = _default_classes()["document"]
    batch: ClassSlo = _default_classes()["batch"]

    @model_validator(mode="before")
    @classmethod
    def _fill_classes(cls, value: object) -> object:
        # Setting one field of a class keeps that class's other defaults (document keeps its 5 s threshold).
        if not isinstance(value, dict):
            return value
        merged = dict(value)
        for name, default in _default_classes().items():
            given = value.get(name)
            if isinstance(given, dict):
                merged[name] = default.model_dump() | given
        return merged

    def definitions(self) -> tuple[SloDefinition, ...]:
        """Every SLO switched on, class by class in priority order, availability before latency."""
        out: list[SloDefinition] = []
        for name in _CLASSES:
            slo: ClassSlo = getattr(self, name)
            if slo.availability is not None:
                out.append(SloDefinition(f"{name}_availability", name, "availability", slo.availability, None))
            if slo.latency is not None:
                out.append(SloDefinition(f"{name}_latency", name, "latency", slo.latency,
                                         slo.latency_threshold_ms / 1000.0))
        return tuple(out)
