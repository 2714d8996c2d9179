"""Frozen value types of the translation memory."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Origin = Literal["human", "model", "import", "correction"]
MatchKind = Literal["exact", "fuzzy"]
SHARED_TENANT = ""  # entries every tenant sees, after its own


@dataclass(frozen=True, slots=True)
class TmEntry:
    source_lang: str
    target_lang: str
    source: str
    target: str
    tenant: str = SHARED_TENANT
    origin: Origin = "model"
    model: str | None = None
    score: float | None = None
    created_at: str = ""  # ISO 8601, UTC

    @property
    def human(self) -> bool:
        """Human-sourced (a person wrote or vetted it): a model entry may never replace it."""
        return self.origin != "model"


@dataclass(frozen=True, slots=True)
class TmMatch:
    kind: MatchKind
    score: float  # 0..1; 1.0 for exact
    entry: TmEntry


@dataclass(frozen=True, slots=True)
class AddResult:
    inserted: int = 0
    updated: int = 0
    kept: int = 0  # a model entry that met a human-sourced one and lost
    skipped: int = 0  # empty or over max_entry_chars (counted by the facade, never stored)

    def __add__(self, other: AddResult) -> AddResult:
        return AddResult(self.inserted + other.inserted, self.updated + other.updated,
                         self.kept + other.kept, self.skipped + other.skipped)
