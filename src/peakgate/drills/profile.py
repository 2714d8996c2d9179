"""Surge profiles: how much traffic, shaped how, made of what.

The offered rate is `baseline_rps` during the baseline phase, climbs linearly to `baseline_rps * multiplier`
over the ramp, holds there, and falls linearly back to the baseline over the decay. Built in: `holiday-5x` and
`holiday-10x` (the same day at two peak heights); any other profile is a TOML or JSON file with the same fields,
every one optional but checked: an unknown or malformed field is an error naming it.
"""

from __future__ import annotations

import json
import tomllib
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from peakgate.control.simulate_config import describe_errors
from peakgate.errors import ConfigError

Kind = Literal["short", "long", "repeated", "document", "batch"]
KINDS: tuple[Kind, ...] = ("short", "long", "repeated", "document", "batch")
PHASES = ("baseline", "ramp", "hold", "decay")
# The server's priority class each kind lands in: DeepL /v2/translate is interactive, uploads are documents,
# /v1/jobs are batch work.
KIND_CLASS: Mapping[Kind, str] = MappingProxyType({
    "short": "interactive", "long": "interactive", "repeated": "interactive", "document": "document",
    "batch": "batch",
})


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Phases(_Strict):
    """Seconds in each phase, in order."""

    baseline_s: float = Field(default=20.0, ge=0)
    ramp_s: float = Field(default=20.0, ge=0)
    hold_s: float = Field(default=60.0, ge=0)
    decay_s: float = Field(default=20.0, ge=0)

    @model_validator(mode="after")
    def _not_empty(self) -> Phases:
        if self.total_s <= 0:
            raise ValueError("the phases last 0 s: give at least one a duration")
        return self

    @property
    def total_s(self) -> float:
        return self.baseline_s + self.ramp_s + self.hold_s + self.decay_s

    def spans(self) -> list[tuple[str, float, float]]:
        """(phase, start, end) in seconds from the run's start."""
        out, at = [], 0.0
        for name, length in zip(PHASES, (self.baseline_s, self.ramp_s, self.hold_s, self.decay_s), strict=True):
            out.append((name, at, at + length))
            at += length
        return out

    def scaled_to(self, total_s: float) -> Phases:
        """The same shape stretched or shrunk to last `total_s`."""
        f = total_s / self.total_s
        return Phases(baseline_s=self.baseline_s * f, ramp_s=self.ramp_s * f, hold_s=self.hold_s * f,
                      decay_s=self.decay_s * f)


class Mix(_Strict):
    """Relative weights of the request kinds (they need not sum to 1)."""

    short: float = Field(default=0.50, ge=0)  # one interactive sentence (/v2/translate)
    long: float = Field(default=0.12, ge=0)  # several sentences in one text (/v2/translate)
    repeated: float = Field(default=0.28, ge=0)  # a phrase drawn Zipf from a fixed pool (/v2/translate)
    document: float = Field(default=0.05, ge=0)  # a .txt upload (/v2/document), then status polls
    batch: float = Field(default=0.05, ge=0)  # a batch job (/v1/jobs), then status polls

    @model_validator(mode="after")
    def _some(self) -> Mix:
        if sum(self.weights()) <= 0:
            raise ValueError("every weight is 0: give at least one kind a weight")
        return self

    def weights(self) -> list[float]:
        return [getattr(self, kind) for kind in KINDS]


class Sizes(_Strict):
    """Inclusive ranges drawn uniformly per request."""

    long_sentences: tuple[int, int] = (4, 10)
    document_lines: tuple[int, int] = (8, 24)
    batch_segments: tuple[int, int] = (10, 30)

    @model_validator(mode="after")
    def _ordered(self) -> Sizes:
        for name in ("long_sentences", "document_lines", "batch_segments"):
            low, high = getattr(self, name)
            if not 1 <= low <= high:
                raise ValueError(f"{name}: need 1 <= low <= high, got ({low}, {high})")
        return self


class Tenant(_Strict):
    name: str = Field(min_length=1)
    keys: tuple[str, ...] = Field(min_length=1)  # sent in turn; a keyless (dev-mode) server ignores them
    weight: float = Field(default=1.0, gt=0)


class Timeouts(_Strict):
    """Client-side limits in seconds; a request past its limit is an error, never silently dropped."""

    translate_s: float = Field(default=15.0, gt=0)
    submit_s: float = Field(default=30.0, gt=0)  # a document upload or a batch submission
    poll_interval_s: float = Field(default=2.0, gt=0)  # first wait between status polls; doubles up to 4x
    # Jobs followed to completion: every k-th job, k chosen so about this many are, spread over the whole run (the
    # first ones alone would describe only the baseline). A bound, so the polls never become the load.
    max_tracked_jobs: int = Field(default=200, ge=0)


# Uneven on purpose: one big shop, two smaller ones, several keys each (fairness is per tenant, not per key).
_TENANTS = (
    Tenant(name="shop-a", keys=("surge-shop-a-1", "surge-shop-a-2"), weight=5),
    Tenant(name="shop-b", keys=("surge-shop-b-1",), weight=3),
    Tenant(name="travel-c", keys=("surge-travel-c-1", "surge-travel-c-2", "surge-travel-c-3"), weight=2),
)


class SurgeProfile(_Strict):
    name: str = "custom"
    baseline_rps: float = Field(default=50.0, gt=0)  # ~1/4 of a 2-core gateway's mixed capacity (docs/surge.md)
    multiplier: float = Field(default=10.0, ge=1)
    phases: Phases = Phases()
    mix: Mix = Mix()
    sizes: Sizes = Sizes()
    tenants: tuple[Tenant, ...] = Field(default=_TENANTS, min_length=1)
    zipf_exponent: float = Field(default=1.1, gt=0)
    phrase_pool: int = Field(default=400, ge=1)
    source_lang: str = "EN"
    target_lang: str = "ES"
    deadline_s: float = Field(default=3.0, gt=0)  # a translate answered later than this is not goodput
    timeouts: Timeouts = Timeouts()

    @property
    def peak_rps(self) -> float:
        return self.baseline_rps * self.multiplier

    def rate_at(self, t: float) -> float:
        """Offered requests per second `t` seconds into the run (0 outside it)."""
        base, peak = self.baseline_rps, self.peak_rps
        for name, start, end in self.phases.spans():
            if start <= t < end:
                frac = (t - start) / (end - start)
                return {"baseline": base, "ramp": base + (peak - base) * frac, "hold": peak,
                        "decay": peak - (peak - base) * frac}[name]
        return 0.0

    def phase_at(self, t: float) -> str:
        return next((name for name, start, end in self.phases.spans() if start <= t < end), PHASES[-1])

    def with_duration(self, total_s: float) -> SurgeProfile:
        return self.model_copy(update={"phases": self.phases.scaled_to(total_s)})


BUILTIN: Mapping[str, SurgeProfile] = MappingProxyType({
    "holiday-5x": SurgeProfile(name="holiday-5x", multiplier=5.0),
    "holiday-10x": SurgeProfile(name="holiday-10x", multiplier=10.0),
})


def load_profile(spec: str) -> SurgeProfile:
    """A built-in name, or a TOML (.toml) or JSON file."""
    if spec in BUILTIN:
        return BUILTIN[spec]
    path = Path(spec)
    if not path.is_file():
        raise ConfigError(f"surge profile {spec!r}: neither a built-in ({', '.join(BUILTIN)}) nor a file")
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"surge profile {path}: cannot read: {exc}") from exc
    except (tomllib.TOMLDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"surge profile {path}: not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError(f"surge profile {path}: expected a table of fields, got {type(data).__name__}")
    data.setdefault("name", path.stem)
    try:
        return SurgeProfile.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"surge profile {path}: {describe_errors(exc)}") from exc
