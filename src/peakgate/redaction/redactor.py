"""De-identify text before it is cached, stored or translated, and put the values back afterwards.

Placeholders are `[P1]`, `[P2]`, ... (see `placeholders`). Checked against `apertium -u eng-spa` and the
shipped int8 SentencePiece student on 25 sentences with 1-3 tokens each: Apertium passed every token through
verbatim; the student kept them in 24 (all 10 of `tests/integration/redaction/`) and dropped one where its
output degenerated. `[1]`, `<1>`, `#1`, `P1`, `X1X`, `Z1` and `@1` did the same or worse, so the form stays,
and restore never trusts the engine: a value whose token is lost is appended to the output.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from peakgate.redaction.detectors import Detector, Match, build_detector, might_contain_pii
from peakgate.redaction.placeholders import placeholder, restore, substitute
from peakgate.redaction.settings import ALL_KINDS, PiiKind, RedactionConfig

__all__ = ["Redacted", "RedactedSpan", "Redactor", "placeholder", "restore"]


@dataclass(frozen=True, slots=True)
class RedactedSpan:
    kind: PiiKind
    start: int  # offsets in the original text
    end: int
    placeholder: str


@dataclass(frozen=True, slots=True)
class Redacted:
    """The text with placeholders, and placeholder -> original value (keep it out of caches and logs)."""

    text: str
    mapping: Mapping[str, str] = field(default_factory=dict)
    spans: tuple[RedactedSpan, ...] = ()


_RANK = {kind: i for i, kind in enumerate(ALL_KINDS)}


def _non_overlapping(matches: Iterable[Match]) -> list[Match]:
    """Leftmost first, then longest, then the kind listed first in ALL_KINDS (an e-mail beats an id)."""
    ordered = sorted(matches, key=lambda m: (m.start, m.start - m.end, _RANK[m.kind]))
    chosen: list[Match] = []
    for m in ordered:
        if not chosen or m.start >= chosen[-1].end:
            chosen.append(m)
    return chosen


class Redactor:
    def __init__(self, detectors: Sequence[Detector]) -> None:
        self._detectors = tuple(detectors)

    @classmethod
    def from_config(cls, config: RedactionConfig) -> Redactor:
        return cls([build_detector(kind) for kind in dict.fromkeys(config.kinds)] if config.enabled else [])

    @property
    def enabled(self) -> bool:
        return bool(self._detectors)

    def redact(self, text: str) -> Redacted:
        if not self._detectors or not might_contain_pii(text):
            return Redacted(text)
        matches = _non_overlapping(m for d in self._detectors for m in d.find(text))
        if not matches:
            return Redacted(text)
        done = substitute(text, ((m.start, m.end, text[m.start : m.end]) for m in matches))
        pairs = zip(matches, done.placeholders, strict=True)
        spans = tuple(RedactedSpan(m.kind, m.start, m.end, ph) for m, ph in pairs)
        return Redacted(done.text, done.mapping, spans)
