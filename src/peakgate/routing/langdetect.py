"""Source-language detection with lingua (`lingua-language-detector`, models shipped in the wheel).

The detector knows the served source languages plus a few it recognises only to refuse them by name
(`DetectionConfig.also_recognise`): restricted like that it is both faster and more accurate on the short UI
strings a translation API sees than with all 75 languages (measured in docs/languages.md). Languages lingua has
no model for (Galician, Occitan, ...) are never detected: callers name them as `source`.
"""

from __future__ import annotations

import functools
from collections.abc import Collection
from typing import Literal, Protocol

from lingua import IsoCode639_1, Language, LanguageDetector, LanguageDetectorBuilder

from peakgate.config import DetectionConfig
from peakgate.errors import ConfigError

Accuracy = Literal["high", "low"]
# The start of a long text decides its language as well as all of it does; lingua's cost grows with length.
MAX_CHARS = 1_000
# Text whose detection loads the Latin-script models: the ones nearly every request needs, so start-up loads
# them (seconds) instead of the first request. Models of other scripts load when such text first arrives.
_WARM_TEXT = "The printer is out of paper."


class Detector(Protocol):
    def detect(self, text: str) -> list[tuple[str, float]]:
        """ISO 639-1 codes with confidence in (0, 1], best first; [] when no language fits at all."""

    def warm(self) -> None:
        """Load what detection needs now (blocking; call off the event loop)."""


def lingua_language(code: str) -> Language | None:
    """The lingua language for an ISO 639-1 code ("pt-br" counts as "pt"); None when lingua lacks it."""
    iso = getattr(IsoCode639_1, code.partition("-")[0].upper(), None)
    return None if iso is None else Language.from_iso_code_639_1(iso)


@functools.lru_cache(maxsize=8)
def _shared(languages: frozenset[Language], accuracy: Accuracy) -> LanguageDetector:
    # One detector per language set and mode in a process: its models take ~300 MB and seconds to load, and
    # every Service in the process (tests, a gateway beside its local fallback) can share them.
    builder = LanguageDetectorBuilder.from_languages(*languages)
    return (builder.with_low_accuracy_mode() if accuracy == "low" else builder).build()


class LinguaDetector:
    """lingua restricted to `languages` (ISO 639-1 codes it knows)."""

    def __init__(self, languages: Collection[str], accuracy: Accuracy = "high") -> None:
        known = frozenset(lang for lang in map(lingua_language, languages) if lang is not None)
        # With one language (or none) lingua knows there is nothing to tell apart: every text is "unknown", and
        # the caller falls back to its default source.
        self._detector = _shared(known, accuracy) if len(known) > 1 else None

    def detect(self, text: str) -> list[tuple[str, float]]:
        if self._detector is None:
            return []
        values = self._detector.compute_language_confidence_values(text[:MAX_CHARS])
        return [(v.language.iso_code_639_1.name.lower(), v.value) for v in values if v.value > 0.0]

    def warm(self) -> None:
        if self._detector is not None:
            self._detector.compute_language_confidence_values(_WARM_TEXT)


def build_detector(config: DetectionConfig, sources: Collection[str]) -> Detector:
    """The detector for the served `sources` plus the languages recognised only to be refused."""
    unknown = [code for code in config.also_recognise if lingua_language(code) is None]
    if unknown:
        raise ConfigError(f"detection.also_recognise: lingua has no model for {unknown}")
    return LinguaDetector({*sources, *config.also_recognise}, config.accuracy)
