"""A block (text and inline tags) → whitespace and tags kept verbatim, and sentences to translate.

The block's decoded text is cut into sentences by `scheduling.split` (line breaks do not end a sentence here,
as DeepL's tag handling defaults to `nonewlines`). Each sentence carries the inline tags inside it, at their
offsets in its whitespace-collapsed text (what the engine sees). A tag belongs to the text it touches: a
closing tag (and a void one) to the text before it, an opening tag to the text after it; tags in the
whitespace between sentences stay there, verbatim. A block without letters is not translated at all.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from peakgate.markup.segment import Inline, Item, Piece, Role, Text
from peakgate.scheduling.split import keep_whole, split_sentences

# html.unescape's own pattern: each match decodes on its own, so raw text can be cut between entities.
_CHARREF = re.compile(r"&(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)")
_LINE_BREAKS = str.maketrans(dict.fromkeys("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029", " "))


@dataclass(frozen=True, slots=True)
class Tag:
    raw: str
    role: Role
    offset: int  # in the sentence's source text
    partner: int | None = None  # the index of the tag that closes (or opens) this one, within the sentence
    spaced: bool = False  # a void tag with whitespace on both sides, which collapsing merged into one space


@dataclass(frozen=True, slots=True)
class Sentence:
    source: str  # whitespace collapsed: what the engine translates
    tags: tuple[Tag, ...] = ()

    def spans(self) -> list[tuple[int, int, str]]:
        """(open index, close index, text) of each tagged part that is less than the whole sentence: translated
        on its own too, so the tags can be found again around its translation."""
        found = []
        for index, tag in enumerate(self.tags):
            if tag.role is Role.OPEN and tag.partner is not None:
                text = self.source[tag.offset:self.tags[tag.partner].offset].strip()
                if text != self.source and any(ch.isalpha() for ch in text):
                    found.append((index, tag.partner, text))
        return found


def raw_slice(piece: Text, start: int, end: int) -> str:
    """The raw markup of `piece.text[start:end]`: entities stay as written (one cut in half is re-escaped)."""
    if piece.raw == piece.text:
        return piece.raw[start:end]
    out: list[str] = []
    decoded = raw_at = 0
    for match in [*_CHARREF.finditer(piece.raw), None]:
        literal_end = match.start() if match else len(piece.raw)
        atoms = [(piece.raw[raw_at:literal_end], piece.raw[raw_at:literal_end])]
        if match:
            atoms.append((match.group(), html.unescape(match.group())))
            raw_at = match.end()
        for raw, text in atoms:
            lo, hi = max(start - decoded, 0), min(end - decoded, len(text))
            if lo < hi:
                whole = (lo, hi) == (0, len(text))
                out.append(raw if whole else raw[lo:hi] if raw == text else html.escape(text[lo:hi], quote=False))
            decoded += len(text)
    return "".join(out)


def collapse(text: str) -> tuple[str, list[int]]:
    """`text` with each whitespace run as one space, and where each offset of `text` lands in it."""
    out: list[str] = []
    where = [0]
    for ch in text:
        if not ch.isspace():
            out.append(ch)
        elif not out or out[-1] != " ":
            out.append(" ")
        where.append(len(out))
    return "".join(out), where


def _pair(tags: list[Tag], names: list[str]) -> tuple[Tag, ...]:
    partners: dict[int, int] = {}
    open_tags: list[int] = []
    for index, tag in enumerate(tags):
        if tag.role is Role.OPEN:
            open_tags.append(index)
        elif tag.role is Role.CLOSE:
            match = next((o for o in reversed(open_tags) if names[o] == names[index]), None)
            if match is not None:
                open_tags.remove(match)
                partners[match], partners[index] = index, match
    return tuple(Tag(t.raw, t.role, t.offset, partners.get(i), t.spaced) for i, t in enumerate(tags))


@dataclass
class _Building:
    start: int
    end: int
    tags: list[Tag] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


class _Splitter:
    def __init__(self, items: Sequence[Item], split: bool) -> None:
        self.items = items
        self.text = "".join(item.text for item in items if isinstance(item, Text))
        cut = split_sentences if split else keep_whole
        parts = cut(self.text.translate(_LINE_BREAKS))
        self.regions: list[tuple[int, int, _Building | None]] = []  # separators have no sentence
        at = 0
        for index, separator in enumerate(parts.separators):
            self.regions.append((at, at + len(separator), None))
            at += len(separator)
            if index < len(parts.sentences):
                end = at + len(parts.sentences[index])
                self.regions.append((at, end, _Building(at, end)))
                at = end
        self.starts = [start for start, _, _ in self.regions]
        self.out: list[str | _Building] = []
        self.current = -1

    def _enter(self, region: int) -> None:
        while self.current < region:
            self.current += 1
            building = self.regions[self.current][2]
            if building is not None:
                self.out.append(building)

    def _emit(self, raw: str) -> None:
        if self.out and isinstance(self.out[-1], str):
            self.out[-1] += raw
        else:
            self.out.append(raw)

    def _region_of(self, offset: int, left: bool) -> int:
        """The region a tag at `offset` belongs to: the one ending there (`left`) or the one starting there."""
        if left:  # the last region starting before the offset (regions tile the text)
            index = max(bisect.bisect_left(self.starts, offset) - 1, 0)
        else:
            index = bisect.bisect_right(self.starts, offset) - 1
            if self.regions[index][1] <= offset:  # at the very end of the text
                index = len(self.regions) - 1
        return max(index, self.current)

    def _text(self, piece: Text, at: int) -> None:
        end = at + len(piece.text)
        for index in range(max(self.current, 0), len(self.regions)):
            start, stop, building = self.regions[index]
            if start >= end:
                break
            if stop > at and stop > start:
                self._enter(index)
                if building is None:
                    self._emit(raw_slice(piece, max(start, at) - at, min(stop, end) - at))

    def _tag(self, tag: Inline, at: int) -> None:
        region = self._region_of(at, tag.role is not Role.OPEN)
        self._enter(region)
        building = self.regions[region][2]
        if building is None:
            self._emit(tag.raw)
        else:
            building.tags.append(Tag(tag.raw, tag.role, at - building.start))
            building.names.append(tag.name)

    def run(self) -> list[str | Sentence]:
        self._enter(0)
        at = 0
        for item in self.items:
            if isinstance(item, Text):
                self._text(item, at)
                at += len(item.text)
            else:
                self._tag(item, at)
        self._enter(len(self.regions) - 1)
        return [piece if isinstance(piece, str) else self._finish(piece) for piece in self.out]

    def _finish(self, building: _Building) -> Sentence:
        text = self.text[building.start:building.end]
        source, where = collapse(text)
        tags = [Tag(t.raw, t.role, where[t.offset], spaced=t.role is Role.POINT and 0 < t.offset < len(text)
                    and text[t.offset - 1].isspace() and text[t.offset].isspace()) for t in building.tags]
        return Sentence(source, _pair(tags, building.names))


def sentences_of(pieces: Sequence[Piece], *, split: bool = True) -> list[str | Sentence]:
    """Skeleton strings and sentences, in document order (adjacent strings joined); without `split`, each
    block is one unit, as DeepL's split_sentences=0 asks."""
    out: list[str | Sentence] = []
    for piece in pieces:
        if isinstance(piece, str):
            parts: list[str | Sentence] = [piece]
        elif not any(ch.isalpha() for item in piece if isinstance(item, Text) for ch in item.text):
            parts = ["".join(item.raw for item in piece)]
        else:
            parts = _Splitter(piece, split).run()
        for part in parts:
            if isinstance(part, str) and out and isinstance(out[-1], str):
                out[-1] += part
            else:
                out.append(part)
    return out
