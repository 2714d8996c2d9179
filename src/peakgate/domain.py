"""Value types that travel along the request path (api → admission → router → scheduler → backends)."""

from __future__ import annotations

from dataclasses import dataclass

from peakgate.config import PriorityClass


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is calling: resolved from the API key by admission."""

    key: str | None
    tenant: str
    priority: PriorityClass
    pinned: bool = False  # pinned tenants keep their tier when the service degrades


@dataclass(frozen=True, slots=True)
class TranslateRequest:
    segments: tuple[str, ...]
    source: str | None  # None: detect
    target: str
    tier: str | None = None  # explicit tier or quality hint ("fast" / "balanced" / "quality")
    model: str | None = None  # explicit model name wins over tier
    priority: PriorityClass | None = None  # None: the key's class
    deadline_ms: float | None = None  # None: the class SLA
    formality: str | None = None
    split_sentences: bool = True
    glossary_id: str | None = None


@dataclass(frozen=True, slots=True)
class Translation:
    text: str
    detected_source: str
    model: str
    tier: str
    origin: str = "engine"  # engine | cache | tm_exact | tm_repaired
    tm_score: float | None = None  # the TM match score when the TM served it
    pivot: str | None = None  # the language it was translated through when no model serves the pair directly


@dataclass(frozen=True, slots=True)
class TranslateResult:
    translations: tuple[Translation, ...]
    billed_characters: int
    degraded: str | None = None  # the degradation level that served it ("L1".."CACHE_ONLY"); None: normal
