"""Put a sentence's inline tags back into its translation, in their original order.

The tags keep their source order, so nesting can never break; only where each lands in the translated text
is chosen. Anchors first: a tagged part that was also translated on its own and whose translation is found
in the sentence's translation (or that is left as it was, like a name) fixes both of its tags there. Every
other tag is placed by proportion between the anchors around it, snapped to a word edge on the same side of
the whitespace as in the source; a tag inside a word, or at either end of the sentence, stays where the
proportion puts it, and one glued to punctuation goes to the nearest word edge. A tag that wrapped words in
the source is kept wrapping at least one word where there is room.
"""

from __future__ import annotations

import bisect
import html
import re
from collections.abc import Mapping

from peakgate.markup.segment import Role
from peakgate.markup.sentences import Sentence, Tag

_WORD = re.compile(r"\w+")
_MIN_STEM = 4  # letters of a word that must match when its ending may differ


def _fits(fixed: dict[int, int], first: int, last: int, start: int, end: int) -> bool:
    """Whether tags `first` and `last` at `start` and `end` keep the order of the tags already fixed."""
    for index, at in fixed.items():
        if (index < first and at > start) or (index > last and at < end) or (first < index < last and
                                                                            not start <= at <= end):
            return False
    return True


def _pattern(needle: str, loose: bool) -> str:
    """`needle` as a pattern; `loose`, its last word's ending may differ ("seleccionado" finds
    "seleccionados"), as a phrase translated alone often comes back inflected otherwise."""
    if not loose:
        return re.escape(needle)
    last = _WORD.search(needle[::-1])
    if last is None or last.start() != 0 or len(last.group()) < _MIN_STEM + 2:
        return ""
    return re.escape(needle[:len(needle) - 2]) + r"\w{0,4}"


def _occurrences(target: str, needle: str, inner: str, loose: bool = False) -> list[tuple[int, int]]:
    """Where `needle` appears in `target`, ignoring case, neither end cutting a word in two; taking in the
    space before or after it when the element's source text (`inner`) had one there."""
    pattern = _pattern(needle, loose) if needle else ""
    if not pattern:
        return []
    found = []
    for match in re.finditer(pattern, target, re.IGNORECASE):
        start, end = match.span()
        cuts = (start > 0 and (target[start - 1] + target[start]).isalnum()) or (
            end < len(target) and (target[end - 1] + target[end]).isalnum())
        if not cuts:
            start -= inner[:1].isspace() and start > 0 and target[start - 1].isspace()
            end += inner[-1:].isspace() and end < len(target) and target[end].isspace()
            found.append((start, end))
    return found


def _anchors(sentence: Sentence, target: str, spans: Mapping[str, str]) -> dict[int, int]:
    fixed: dict[int, int] = {}
    scale = len(target) / max(len(sentence.source), 1)
    for first, last, text in sentence.spans():
        guess = sentence.tags[first].offset * scale
        inner = sentence.source[sentence.tags[first].offset:sentence.tags[last].offset]
        translated = spans.get(text, "").strip()
        # Its translation, else the text left unchanged (a name), else its translation inflected otherwise.
        for candidate, loose in ((translated, False), (text, False), (translated, True)):
            options = [(abs(start - guess), start, end) for start, end in
                       _occurrences(target, candidate, inner, loose) if _fits(fixed, first, last, start, end)]
            if options:
                _, fixed[first], fixed[last] = min(options)
                break
    return fixed


def _edges(target: str) -> tuple[list[int], list[int]]:
    words = list(_WORD.finditer(target))
    return [m.start() for m in words], [m.end() for m in words]


def _snap(edges: list[int], guess: float, low: int, high: int) -> int:
    lo, hi = bisect.bisect_left(edges, low), bisect.bisect_right(edges, high)
    inside = edges[lo:hi]
    if not inside:
        return min(max(round(guess), low), high)
    return min(inside, key=lambda edge: (abs(edge - guess), edge))


def positions(sentence: Sentence, target: str, spans: Mapping[str, str]) -> list[int]:
    """Where each tag goes in `target`: non-decreasing, in tag order."""
    fixed = _anchors(sentence, target, spans)
    starts, ends = _edges(target)
    tags, source_len = sentence.tags, len(sentence.source)
    out: list[int] = []
    for index, tag in enumerate(tags):
        if index in fixed:
            out.append(max(fixed[index], out[-1] if out else 0))
            continue
        left = max((i for i in fixed if i < index), default=None)
        right = min((i for i in fixed if i > index), default=None)
        src_lo, tgt_lo = (tags[left].offset, fixed[left]) if left is not None else (0, 0)
        src_hi, tgt_hi = (tags[right].offset, fixed[right]) if right is not None else (source_len, len(target))
        share = (tag.offset - src_lo) / (src_hi - src_lo) if src_hi > src_lo else 0.0
        guess = tgt_lo + share * (tgt_hi - tgt_lo)
        low = max(tgt_lo, out[-1] if out else 0)
        if left is not None and tag.offset == src_lo:  # where an anchored tag at the same place went
            at = low
        elif right is not None and tag.offset == src_hi:
            at = max(tgt_hi, low)
        else:
            at = _snap(_edges_for(tag, sentence.source, starts, ends), guess, low, max(tgt_hi, low))
        if tag.role is Role.CLOSE and tag.partner is not None and at == out[tag.partner] and \
                sentence.source[tags[tag.partner].offset:tag.offset].strip():
            at = _widen(ends, at, max(tgt_hi, low))
        out.append(at)
    return out


def _edges_for(tag: Tag, source: str, starts: list[int], ends: list[int]) -> list[int]:
    """Where a tag may land: anywhere (none listed) inside a word or at the sentence's ends; at any word edge
    when glued between a word and punctuation; else on the same side of a word as in the source: before one
    when whitespace precedes the tag, after one when whitespace follows it."""
    if tag.offset in {0, len(source)}:
        return []
    before, after = source[tag.offset - 1], source[tag.offset]
    if (before + after).isalnum():  # "H<sub>2</sub>O", "shop<sup>1</sup>"
        return []
    if not before.isspace() and not after.isspace():  # "world</b>.", "Yes?<img>the"
        return sorted(starts + ends)
    return starts if before.isspace() else ends


def _widen(ends: list[int], at: int, high: int) -> int:
    """A closing tag whose element wrapped text in the source moves to the next word's end, if there is one."""
    later = bisect.bisect_right(ends, at)
    return ends[later] if later < len(ends) and ends[later] <= high else at


def _spaced(tag: Tag, target: str, at: int) -> str:
    """A void tag that stood between two spaces gets its second space back where the translation has one."""
    if not tag.spaced or not 0 < at < len(target):
        return tag.raw
    before, after = target[at - 1].isspace(), target[at].isspace()
    return tag.raw + " " if before and not after else " " + tag.raw if after and not before else tag.raw


def render(sentence: Sentence, target: str, spans: Mapping[str, str]) -> str:
    """The translated sentence, escaped, with the sentence's tags put back."""
    target = target.strip()
    out: list[str] = []
    done = 0
    for tag, at in zip(sentence.tags, positions(sentence, target, spans), strict=True):
        out += (html.escape(target[done:at], quote=False), _spaced(tag, target, at))
        done = at
    out.append(html.escape(target[done:], quote=False))
    return "".join(out)
