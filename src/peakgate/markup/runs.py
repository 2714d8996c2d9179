"""Formatted runs (a .docx paragraph's) as inline markup: translate the paragraph, put the words back in runs.

Each run becomes an element wrapping its text, so the paragraph is translated sentence by sentence like any
marked-up text and the runs' bounds are placed in the translation as inline tags are (`markup.place`): a
bold word keeps its bold run. Text the placement leaves between two runs joins the run before it; whitespace
there joins the run after it.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence

from peakgate.markup.document import MarkupDocument
from peakgate.markup.segment import Inline, Item, Role, Text
from peakgate.markup.sentences import sentences_of

_MARK = re.compile(r"<(/?)r(\d+)>")  # every other "<" in rebuilt text is escaped


def runs_document(runs: Sequence[str]) -> MarkupDocument:
    """The runs' texts as one block of inline elements, <r0>…</r0><r1>…</r1>."""
    items: list[Item] = []
    for index, text in enumerate(runs):
        name = f"r{index}"
        items += [Inline(f"<{name}>", Role.OPEN, name), Text(html.escape(text, quote=False), text),
                  Inline(f"</{name}>", Role.CLOSE, name)]
    return MarkupDocument(tuple(sentences_of([items])))


def spread(document: MarkupDocument, runs: int, translations: Mapping[str, str]) -> list[str]:
    """The new text of each of the `runs` runs, from the document rebuilt with `translations`."""
    texts = [""] * runs
    current: int | None = None  # the run open at this point
    previous: int | None = None  # the run closed last
    carry = ""  # whitespace between runs, for the next one
    parts = _MARK.split(document.rebuild(translations))  # text, "/" or "", run number, text, …
    for at in range(0, len(parts), 3):
        text = html.unescape(parts[at])
        if current is not None:
            texts[current] += text
        elif text.strip() and previous is not None:
            texts[previous] += carry + text
            carry = ""
        else:
            carry += text
        if at + 2 < len(parts):
            index = int(parts[at + 2])
            current, previous = (None, index) if parts[at + 1] else (index, previous)
            if current is not None:
                texts[index], carry = carry + texts[index], ""
    texts[previous if previous is not None else 0] += carry
    return texts
