"""Sentence splitting that reassembles exactly: every input character lands in a sentence or in a separator.

Engines translate sentences better (and batch them better) than whole documents, but the document must come
back with its own layout, so the whitespace between sentences is kept verbatim and never sent to the engine.

A boundary is any whitespace run that holds a line break, or one that follows a sentence end (`.`, `?`, `!`,
`…`, optionally closed by quotes or brackets) when the next word does not start in lower case (a lower-case
continuation means an abbreviation or an interjection, not a new sentence) and the word before a `.` is not a
known abbreviation, an initial ("J.") or a dotted form ("e.g.", "U.S."). CJK full stops end a sentence even
without a following space. Numbers like 3.14 have no whitespace after the dot, so they are never split.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_TERMINALS = ".?!…。！？"
_CLOSERS = "\"'”’»)]}」』"
_OPENERS = "\"'“‘«([{「『"
_LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029")
_GAP = re.compile(r"\s+")
_CJK_END = re.compile(r"[。！？]+[\"'”’»)\]}」』]*(?=\S)")
_DOTTED = re.compile(r"(?:\w\.)+\w")  # e.g, i.e, U.S, a.m (the final dot already removed)
_ABBREVIATIONS = frozenset((
    "mr", "mrs", "ms", "mx", "dr", "prof", "sr", "sra", "srta", "jr", "st", "mt", "ft", "rev", "hon",
    "gen", "col", "capt", "lt", "sgt", "vs", "etc", "al", "cf", "ca", "approx", "dept", "est", "fig", "figs",
    "vol", "vols", "no", "nos", "nr", "pp", "pg", "ch", "sec", "art", "inc", "ltd", "co", "corp", "bros",
    "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec",
    "ud", "uds", "dña", "dra", "pág", "núm", "bzw", "usw",
))


@dataclass(frozen=True, slots=True)
class Split:
    """`separators` has one more entry than `sentences`: before the first, between each pair, after the last."""

    sentences: tuple[str, ...]
    separators: tuple[str, ...]

    def join(self, translated: Sequence[str]) -> str:
        """Put translations back between the original separators (`join(sentences)` is the input again)."""
        if len(translated) != len(self.sentences):
            raise ValueError(f"expected {len(self.sentences)} translations, got {len(translated)}")
        parts = [self.separators[0]]
        for text, separator in zip(translated, self.separators[1:], strict=True):
            parts += (text, separator)
        return "".join(parts)


def keep_whole(text: str) -> Split:
    """The text as one sentence; only its outer whitespace is set aside (whitespace-only text has no sentence)."""
    lead = len(text) - len(text.lstrip())
    end = len(text.rstrip())
    if end <= lead:
        return Split((), (text,))
    return Split((text[lead:end],), (text[:lead], text[end:]))


def split_sentences(text: str) -> Split:
    whole = keep_whole(text)
    if not whole.sentences:
        return whole
    core = whole.sentences[0]
    sentences: list[str] = []
    separators = [whole.separators[0]]
    start = 0
    for cut_start, cut_end in _cuts(core):
        sentences.append(core[start:cut_start])
        separators.append(core[cut_start:cut_end])
        start = cut_end
    sentences.append(core[start:])
    separators.append(whole.separators[1])
    return Split(tuple(sentences), tuple(separators))


def _cuts(core: str) -> list[tuple[int, int]]:
    """Separator spans inside `core` (no outer whitespace), in order; zero-width after CJK stops."""
    cuts = [
        (m.start(), m.end())
        for m in _GAP.finditer(core)
        if _LINE_BREAKS.intersection(m.group()) or _ends_sentence(core[: m.start()], core[m.end() :])
    ]
    cuts += [(m.end(), m.end()) for m in _CJK_END.finditer(core)]
    return sorted(cuts)


def _ends_sentence(before: str, after: str) -> bool:
    body = before.rstrip(_CLOSERS)
    if not body or body[-1] not in _TERMINALS or after[:1].islower():
        return False
    if body[-1] != ".":
        return True
    word = body[:-1].rsplit(maxsplit=1)[-1].lstrip(_OPENERS) if body[:-1].strip() else ""
    return not _is_abbreviation(word)


def _is_abbreviation(word: str) -> bool:
    if len(word) == 1:
        return word.isalpha() and word.isupper()  # an initial, as in "J. Smith"
    return word.lower() in _ABBREVIATIONS or _DOTTED.fullmatch(word) is not None
