"""Quality estimation of one translation, without a reference: pure checks over the source, the output, the
engine's confidence and the detected output language.

The checks catch what the students were seen to do on everyday and held-out text: hand the input back
("Hello" -> "Hello"), loop ("TIFFFFFFFF", "isrc/isrc/isrc/..."), stay in the source language, run far longer or
shorter than a translation of the pair does, or decode with low confidence. A verdict lists the failed checks;
`prefer_fallback` compares two verdicts for the same source.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from peakgate.quality.settings import QualityConfig

Reason = Literal["identity", "loop", "source_language", "length_ratio", "low_confidence"]
REASONS: tuple[Reason, ...] = ("identity", "loop", "source_language", "length_ratio", "low_confidence")

# A unit of 2-30 characters three times in a row, or one character four times: no Spanish or English word does
# either ("Ferrocarril" has "rr" twice), and "....", "----" or "1111" carry no letter and are left alone.
_LOOP = re.compile(r"(.{2,30}?)\1{2,}|(.)\2{3,}", re.DOTALL)
_WORD = re.compile(r"[^\W\d_]+")
_EDGES = " \t\n.!?…¡¿:;,\"'«»()[]"
# An identical output is a failure only when the source holds a word that needs translating: two-letter words
# and acronyms are the same in both languages far more often than not ("No", "OK", "PDF", "TIFF").
_MIN_TRANSLATABLE_LETTERS = 3


@dataclass(frozen=True, slots=True)
class Verdict:
    reasons: tuple[Reason, ...]  # failed checks, in REASONS order
    confidence: float | None = None

    @property
    def ok(self) -> bool:
        return not self.reasons

    @property
    def penalty(self) -> int:
        """Two points per hard failure, one for low confidence alone: a confident loop is worse than an unsure
        translation."""
        return sum(1 if r == "low_confidence" else 2 for r in self.reasons)


def prefer_fallback(primary: Verdict, fallback: Verdict) -> bool:
    """Serve the fallback candidate only when it fails strictly less: on a tie the primary engine, the tier's
    better one on average, keeps the segment."""
    return fallback.penalty < primary.penalty


def _fold(text: str) -> str:
    return " ".join(unicodedata.normalize("NFC", text).casefold().split()).strip(_EDGES)


def same_text(source: str, output: str) -> bool:
    """Equal but for case, spacing and outer punctuation."""
    return _fold(source) == _fold(output)


def needs_translation(source: str) -> bool:
    return any(len(w) >= _MIN_TRANSLATABLE_LETTERS and not w.isupper() for w in _WORD.findall(source))


def loop_in(source: str, output: str) -> str | None:
    """The first repetition run in `output` that holds a letter and is not copied from the source, else None."""
    for match in _LOOP.finditer(output):
        run = match.group(0)
        if any(ch.isalpha() for ch in run) and run not in source:
            return run
    return None


def length_ratio_fails(source: str, output: str, bounds: tuple[float, float], min_chars: int) -> bool:
    stripped = source.strip()
    if len(stripped) < min_chars:
        return False
    ratio = len(output.strip()) / len(stripped)
    return not bounds[0] <= ratio <= bounds[1]


def assess(
    source: str, output: str, *, pair: tuple[str, str], confidence: float | None,
    output_language: tuple[str, float] | None, config: QualityConfig,
) -> Verdict:
    """Every check on one (source, output): `confidence` is the engine's mean token log-probability (None: the
    engine gives none), `output_language` the detector's best (language, confidence) for the output."""
    failed: set[Reason] = set()
    same = same_text(source, output)
    if same and needs_translation(source):
        failed.add("identity")
    if loop_in(source, output) is not None:
        failed.add("loop")
    # An output equal to its source is judged by the identity rule alone ("No" is Spanish too).
    if (not same and output_language is not None and output_language[0] == pair[0]
            and output_language[1] >= config.source_language_confidence):
        failed.add("source_language")
    if length_ratio_fails(source, output, config.length_bounds(*pair), config.length_ratio_min_chars):
        failed.add("length_ratio")
    if confidence is not None and confidence < config.min_confidence:
        failed.add("low_confidence")
    return Verdict(tuple(r for r in REASONS if r in failed), confidence)
