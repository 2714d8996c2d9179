"""Capacity profiles: what one replica serves, from the engines' measured sentences/s by batch size.

A profile (`profiles/<name>.json`, or any file) holds one stream's measured rate at a few batch sizes and the
number of streams a replica runs side by side. Under load the dynamic batcher grows batches until a stream
keeps up with its arrivals, so a stream serving `rate` sentences/s runs batches of the size whose measured
rate is `rate` (interpolated in log2 of the batch size), each taking batch / rate(batch) seconds; beyond the
largest measured batch it is saturated. Profiles may also carry measured start-up times (null: not measured).
"""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from peakgate.control.simulate_config import describe_errors
from peakgate.errors import ConfigError

PROFILES_DIR = Path(__file__).resolve().parent / "profiles"


class CapacityProfile(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    model: str
    device: str
    source: str  # where the figures came from
    sentences_per_s_by_batch: dict[int, float]  # one stream
    streams_per_replica: int = Field(ge=1)
    streams_note: str = ""
    cold_start_s: float | None = Field(default=None, gt=0)
    warm_promotion_s: float | None = Field(default=None, gt=0)
    startup_source: str = ""  # where the start-up times came from

    @field_validator("sentences_per_s_by_batch")
    @classmethod
    def _rising(cls, curve: dict[int, float]) -> dict[int, float]:
        points = sorted(curve.items())
        if any(b < 1 or r <= 0 for b, r in points):
            raise ValueError("batch sizes must be >= 1 and rates > 0")
        if any(r2 < r1 for (_b1, r1), (_b2, r2) in itertools.pairwise(points)):
            raise ValueError("the rate must not fall as the batch grows")
        return dict(points)


class CapacityCurve:
    """A profile's curve, ready for the simulator's per-second questions."""

    def __init__(self, profile: CapacityProfile) -> None:
        if not profile.sentences_per_s_by_batch:
            raise ConfigError(f"capacity profile {profile.name!r} has no measured rates yet: {profile.source}")
        self.profile = profile
        self.streams = profile.streams_per_replica
        self._log_batch = np.log2(np.array(list(profile.sentences_per_s_by_batch), dtype=np.float64))
        self._rates = np.array(list(profile.sentences_per_s_by_batch.values()), dtype=np.float64)

    @property
    def replica_rate(self) -> float:
        """Sentences/s one saturated replica serves (every stream at the largest measured batch)."""
        return self.streams * float(self._rates[-1])

    def batch_for(self, stream_rate: float) -> float:
        """The batch size a stream runs to keep up with `stream_rate` (the smallest measured when below it)."""
        return float(2 ** np.interp(stream_rate, self._rates, self._log_batch))

    def batch_time_s(self, stream_rate: float) -> float:
        """How long the batch a stream runs at `stream_rate` takes."""
        batch = self.batch_for(stream_rate)
        return batch / float(np.interp(math.log2(batch), self._log_batch, self._rates))

    def in_flight(self, served_per_s: float, replicas: int) -> float:
        """Sentences in running batches (Little's law: the rate times one batch's duration)."""
        if replicas <= 0 or served_per_s <= 0:
            return 0.0
        return served_per_s * self.batch_time_s(served_per_s / (replicas * self.streams))


def load_profile(name_or_path: str) -> CapacityProfile:
    """A profile by name (`profiles/<name>.json`) or by path."""
    path = Path(name_or_path)
    if not path.suffix:
        path = PROFILES_DIR / f"{name_or_path}.json"
    try:
        return CapacityProfile.model_validate(json.loads(path.read_text(encoding="utf-8")))
    except OSError as exc:
        raise ConfigError(f"capacity profile {path}: cannot read: {exc}") from exc
    except json.JSONDecodeError as exc:
        raise ConfigError(f"capacity profile {path}: not valid JSON: {exc}") from exc
    except ValidationError as exc:
        raise ConfigError(f"capacity profile {path}: {describe_errors(exc)}") from exc
