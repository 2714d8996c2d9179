"""Glossary enforcement: source terms become placeholders before the engine, target terms after it.

Terms match case-insensitively on word boundaries, longest first ("user account" wins over "account").
The placeholders are the redaction ones (`peakgate.redaction.placeholders`), numbered past any already in
the text, so protection runs after PII redaction and each pass restores only its own tokens.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from peakgate.glossary.entries import Entry
from peakgate.redaction.placeholders import placeholder_spans, restore, substitute

__all__ = ["Protected", "TermMatcher", "protect", "restore_terms"]


@dataclass(frozen=True, slots=True)
class Protected:
    text: str
    mapping: Mapping[str, str] = field(default_factory=dict)  # placeholder -> target term


def _cased(target: str, matched: str, source: str) -> str:
    # "Server is down" with server→servidor: the capital came from the sentence, so the target keeps it.
    if matched[:1].isupper() and source[:1].islower() and target[:1].islower():
        return target[:1].upper() + target[1:]
    return target


class TermMatcher:
    """One glossary compiled once (a regex over every source term); reuse it across requests."""

    def __init__(self, entries: Iterable[Entry]) -> None:
        self._exact: dict[str, Entry] = {}
        self._folded: dict[str, Entry] = {}
        for e in entries:
            self._exact[e.source] = e
            self._folded.setdefault(e.source.casefold(), e)
        terms = sorted(self._exact, key=len, reverse=True)
        body = "|".join(re.escape(t) for t in terms)
        self._pattern = re.compile(rf"(?<!\w)(?:{body})(?!\w)", re.IGNORECASE) if terms else None

    def _entry(self, matched: str) -> Entry | None:
        return self._exact.get(matched) or self._folded.get(matched.casefold())

    def protect(self, text: str) -> Protected:
        if self._pattern is None:
            return Protected(text)
        taken = placeholder_spans(text)
        spans: list[tuple[int, int, str]] = []
        for m in self._pattern.finditer(text):
            entry = self._entry(m.group())
            if entry is None or any(s < m.end() and m.start() < e for s, e in taken):
                continue  # inside an earlier pass's placeholder, or a case-fold the dict cannot map back
            spans.append((m.start(), m.end(), _cased(entry.target, m.group(), entry.source)))
        if not spans:
            return Protected(text)
        done = substitute(text, spans)
        return Protected(done.text, done.mapping)


def protect(text: str, entries: Iterable[Entry]) -> Protected:
    """One-off protection; build a `TermMatcher` instead to protect many texts with one glossary."""
    return TermMatcher(entries).protect(text)


def restore_terms(translated: str, protected: Protected) -> str:
    """Target terms in; a term whose placeholder the engine lost is appended rather than dropped."""
    return restore(translated, protected.mapping)
