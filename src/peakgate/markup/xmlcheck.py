"""XML well-formedness, checked with expat before any XML is translated (DeepL's tag_handling=xml is strict).

A text may be a fragment ("Press <b>Continue</b>.") rather than a document: text outside any element, or
several top-level elements. What does not parse as a document is checked again inside a wrapper element,
after its prolog (XML declaration, doctype, comments), so the rest of XML's rules still apply: closed tags,
quoted attributes, known entities.
"""

from __future__ import annotations

import re
from xml.parsers import expat
from xml.parsers.expat import errors

from peakgate.errors import BadRequest

_PROLOG = re.compile(r"(?:<\?xml[^>]*\?>)?(?:\s+|<!--.*?-->|<\?.*?\?>|<!DOCTYPE[^\[>]*(?:\[.*?\])?\s*>)*",
                     re.DOTALL)
_WRAPPER = "peakgate-fragment"


class MalformedMarkup(BadRequest):
    code = "malformed_markup"


def _parse(text: str) -> expat.ExpatError | None:
    parser = expat.ParserCreate()
    try:
        parser.Parse(text, True)
    except expat.ExpatError as exc:
        return exc
    return None


def check_xml(text: str) -> None:
    """Raise `MalformedMarkup` naming expat's complaint unless `text` is a well-formed document or fragment."""
    if _parse(text) is None:
        return
    prolog = _PROLOG.match(text)
    cut = prolog.end() if prolog else 0
    opening = f"<{_WRAPPER}>"
    error = _parse(f"{text[:cut]}{opening}{text[cut:]}</{_WRAPPER}>")
    if error is None:
        return
    line, column = error.lineno, error.offset
    cut_line = text.count("\n", 0, cut) + 1
    if line == cut_line and column >= cut - (text.rfind("\n", 0, cut) + 1) + len(opening):
        column -= len(opening)  # report the place in the caller's text, not in the wrapped one
    raise MalformedMarkup(f"Tag handling parsing failed, please check input: {errors.messages[error.code]} "
                          f"(line {line}, column {column + 1})") from error
