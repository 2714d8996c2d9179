"""The `[P1]`, `[P2]`, ... placeholders shared by PII redaction and glossary term protection.

Both put tokens into the source before the engine and swap values back in afterwards; sharing one
numbering scheme (always past any number already in the text) is what lets glossary protection run
after redaction without the two clashing. Restoring is tolerant of what engines do to the tokens
(inserted spaces, lower case, full-width brackets, lost brackets) and never loses data: a value whose
placeholder is gone from the output is appended at the end.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_TOLERANT = re.compile(r"[\[［]\s*[Pp]\s*(\d+)\s*[\]］]")
_BARE = re.compile(r"(?<![\w\[［])[Pp] ?(\d+)(?![\w\]］])")


def placeholder(n: int) -> str:
    return f"[P{n}]"


def placeholder_spans(text: str) -> list[tuple[int, int]]:
    """Where placeholder-looking tokens sit, so later passes (glossary terms) leave them alone."""
    return [m.span() for m in _TOLERANT.finditer(text)]


def first_free_number(text: str) -> int:
    # Placeholder-looking text already in the source must never be mistaken for ours on restore.
    taken = [int(m.group(1)) for pat in (_TOLERANT, _BARE) for m in pat.finditer(text)]
    return max(taken, default=0) + 1


@dataclass(frozen=True, slots=True)
class Substituted:
    text: str
    mapping: dict[str, str]  # placeholder -> the value restore puts back
    placeholders: tuple[str, ...]  # one per span, in span order


def substitute(text: str, spans: Iterable[tuple[int, int, str]]) -> Substituted:
    """Replace sorted, non-overlapping (start, end, value) spans with fresh placeholders.

    Equal values share one placeholder, numbered from past anything placeholder-like already in `text`.
    """
    next_n = first_free_number(text)
    by_value: dict[str, str] = {}
    parts: list[str] = []
    used: list[str] = []
    pos = 0
    for start, end, value in spans:
        if value not in by_value:
            by_value[value] = placeholder(next_n)
            next_n += 1
        parts += [text[pos:start], by_value[value]]
        used.append(by_value[value])
        pos = end
    parts.append(text[pos:])
    return Substituted("".join(parts), {ph: value for value, ph in by_value.items()}, tuple(used))


def restore(translated: str, mapping: Mapping[str, str]) -> str:
    """Put every value back; missing placeholders' values are appended (space-separated) so none is lost.

    Every occurrence is replaced, so an engine that repeats a placeholder repeats the value too; tokens
    not in `mapping` (the user's own "[P7]", or another pass's placeholders) are left as they are. All
    spans are found in the engine output first, so a restored value is never scanned again.
    """
    if not mapping:
        return translated
    hits = [(m.start(), m.end(), ph) for m in _TOLERANT.finditer(translated)
            if (ph := placeholder(int(m.group(1)))) in mapping]
    found = {ph for _, _, ph in hits}
    for ph in [ph for ph in mapping if ph not in found]:
        # An engine that dropped the brackets may still have kept "P3"; trust it only when unambiguous.
        bare = [m for m in _BARE.finditer(translated) if placeholder(int(m.group(1))) == ph]
        if len(bare) == 1:
            hits.append((bare[0].start(), bare[0].end(), ph))
            found.add(ph)
    parts: list[str] = []
    pos = 0
    for start, end, ph in sorted(hits):
        parts += [translated[pos:start], mapping[ph]]
        pos = end
    parts.append(translated[pos:])
    out = "".join(parts)
    lost = [mapping[ph] for ph in mapping if ph not in found]
    return " ".join([out.rstrip(), *lost]) if lost else out
