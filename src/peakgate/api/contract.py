"""What the HTTP layer needs from the pipeline behind it (implemented by `peakgate.service.Service`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from peakgate.config import Settings
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.memory import AddResult
from peakgate.observe.metrics import Metrics


@dataclass(frozen=True, slots=True)
class Language:
    code: str  # lower-case ISO 639-1, e.g. "en"
    name: str  # English name, e.g. "English"
    targets: tuple[str, ...]  # codes this language translates into


@dataclass(frozen=True, slots=True)
class Usage:
    character_count: int
    character_limit: int  # 0 when unlimited


@dataclass(frozen=True, slots=True)
class Readiness:
    """What `/readyz` tells a load balancer: take traffic, or send it elsewhere for `retry_after_s`."""

    ready: bool
    status: str  # "ready", "warming up", or why it is refusing work
    retry_after_s: float | None = None


class TranslationService(Protocol):
    settings: Settings
    metrics: Metrics

    def authenticate(self, key: str | None) -> Principal:
        """Raise `Unauthorized` for a bad key; open dev mode returns an anonymous principal."""

    async def translate(self, request: TranslateRequest, principal: Principal) -> TranslateResult:
        """Admission (token buckets, quotas) → router → scheduler → engines.

        Raises from the exception tree: `BadRequest` subclasses, `RateLimited`/`Overloaded`
        (with `retry_after_s`), `QuotaExceeded`, `DeadlineExceeded`, `BackendError`.
        """

    def detect(self, text: str) -> list[tuple[str, float]]:
        """Candidate languages with confidence in [0, 1], best first."""

    def languages(self) -> list[Language]: ...

    async def usage(self, principal: Principal) -> Usage: ...

    def readiness(self) -> Readiness:
        """Ready once every model has warmed up, and while interactive work can still make its deadline."""

    def add_correction(self, principal: Principal, source_lang: str, target_lang: str, source: str,
                       target: str) -> AddResult:
        """A human translation into the caller's translation memory (it then wins over engine output)."""
