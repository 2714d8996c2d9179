"""Markup as a flat run of tokens, each with its exact [start, end) span in the source text.

The stdlib `html.parser` finds the events; a token runs from its event's position to the next one's, so the
tokens tile the input and joining their raw text gives it back byte for byte, whatever the markup holds.
Text is decoded (entities resolved) for translation; a text token whose raw bytes do not decode to what the
parser reported (markup the parser swallowed, such as `</>`) is kept opaque, never translated.
"""

from __future__ import annotations

import enum
import html
import re
from dataclasses import dataclass
from html.parser import HTMLParser

_NAME = re.compile(r"</?\s*([^\s/>]+)")


class Kind(enum.Enum):
    TEXT = "text"
    START = "start"  # <b>
    END = "end"  # </b>
    EMPTY = "empty"  # <br/>, a self-closing tag
    COMMENT = "comment"  # also CDATA sections and opaque text: kept as they are, inline
    DECLARATION = "declaration"  # <!DOCTYPE …>, <?xml …?>: document-level, never inside a sentence


@dataclass(frozen=True, slots=True)
class Token:
    kind: Kind
    raw: str  # the exact source text of the token
    name: str = ""  # the tag name: lower case in HTML, as written in XML
    attrs: tuple[tuple[str, str | None], ...] = ()  # names lower-cased, values decoded
    text: str = ""  # TEXT: the decoded text

    def attr(self, name: str) -> str | None:
        return next((value for key, value in self.attrs if key == name), None)


class _Events(HTMLParser):
    """(kind, offset, name, attrs, data) for every parser event, in order."""

    def __init__(self, source: str, *, xml: bool) -> None:
        super().__init__(convert_charrefs=True)
        self._xml = xml
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", source)]
        self.events: list[tuple[Kind, int, str, tuple[tuple[str, str | None], ...], str]] = []
        self.feed(source)
        self.close()

    def set_cdata_mode(self, elem: str, *, escapable: bool = False) -> None:
        if self._xml:
            return  # <script>, <style>, <title> are ordinary elements in XML
        # Python versions before 3.13.4 know no escapable (RCDATA) mode: pass the flag only when it is set.
        super().set_cdata_mode(elem, **({"escapable": True} if escapable else {}))

    def _add(self, kind: Kind, attrs: list[tuple[str, str | None]] | None = None, data: str = "") -> None:
        line, column = self.getpos()
        self.events.append((kind, self._line_starts[line - 1] + column, "", tuple(attrs or ()), data))

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add(Kind.START, attrs)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._add(Kind.EMPTY, attrs)

    def handle_endtag(self, tag: str) -> None:
        self._add(Kind.END)

    def handle_data(self, data: str) -> None:
        self._add(Kind.TEXT, data=data)

    def handle_comment(self, data: str) -> None:
        self._add(Kind.COMMENT)

    def unknown_decl(self, data: str) -> None:  # <![CDATA[…]]>
        self._add(Kind.COMMENT)

    def handle_decl(self, decl: str) -> None:
        self._add(Kind.DECLARATION)

    def handle_pi(self, data: str) -> None:
        self._add(Kind.DECLARATION)


def tokenize(source: str, *, xml: bool = False) -> list[Token]:
    """The tokens of `source`, in order; "".join(t.raw for t in tokens) == source."""
    events = _Events(source, xml=xml).events
    merged: list[tuple[Kind, int, tuple[tuple[str, str | None], ...], str]] = []
    if (events[0][1] if events else len(source)) > 0:
        merged.append((Kind.COMMENT, 0, (), ""))  # bytes before the first event: markup the parser dropped
    for kind, offset, _, attrs, data in events:
        if kind is Kind.TEXT and merged and merged[-1][0] is Kind.TEXT:
            last = merged[-1]
            merged[-1] = (Kind.TEXT, last[1], (), last[3] + data)  # the parser hands text over in pieces
        else:
            merged.append((kind, offset, attrs, data))
    ends = [offset for _, offset, _, _ in merged[1:]] + [len(source)] if merged else []
    return [_token(kind, source[start:end], attrs, data, xml)
            for (kind, start, attrs, data), end in zip(merged, ends, strict=True)]


def _token(kind: Kind, raw: str, attrs: tuple[tuple[str, str | None], ...], data: str, xml: bool) -> Token:
    if kind is Kind.TEXT:
        if html.unescape(raw) != data:
            return Token(Kind.COMMENT, raw)  # the parser dropped something inside: keep it untouched
        return Token(kind, raw, text=data)
    if kind in (Kind.START, Kind.END, Kind.EMPTY):
        match = _NAME.match(raw)
        name = match.group(1) if match else ""
        return Token(kind, raw, name if xml else name.lower(), attrs)
    return Token(kind, raw)
