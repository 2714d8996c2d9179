"""Tokens → the document's skeleton and its blocks: runs of text and inline tags between splitting tags.

A tag splits (ends the running text) by DeepL's rules: `splitting_tags` always, `non_splitting_tags` never;
otherwise HTML's block elements split and its phrasing elements (<b>, <a>, <span>, …) do not, while XML, with
`outline_detection` on, treats an element as inline when its parent holds text of its own (mixed content) and
as structure otherwise; with it off, only `splitting_tags` split. An element in `ignore_tags`, with
translate="no" or class="notranslate", and HTML's <script> and <style>, is copied whole: inside a sentence
it is one inline item, elsewhere part of the skeleton. Comments and CDATA sections are inline items.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass

from peakgate.markup.options import MarkupOptions
from peakgate.markup.tokens import Kind, Token

_HTML_INLINE = frozenset({
    "a", "abbr", "acronym", "b", "bdi", "bdo", "big", "button", "cite", "code", "data", "del", "dfn", "em",
    "font", "i", "img", "input", "ins", "kbd", "label", "mark", "meter", "nobr", "output", "progress", "q",
    "ruby", "rb", "rp", "rt", "s", "samp", "select", "small", "span", "strike", "strong", "sub", "sup", "time",
    "tt", "u", "var", "wbr",
})
_HTML_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "param",
                        "source", "track", "wbr"})
_HTML_SKIPPED = frozenset({"script", "style"})


class Role(enum.Enum):
    OPEN = "open"
    CLOSE = "close"
    POINT = "point"  # a void tag, a comment, an untranslated element: no text inside


@dataclass(frozen=True, slots=True)
class Inline:
    raw: str
    role: Role
    name: str = ""  # pairs an OPEN with its CLOSE


@dataclass(frozen=True, slots=True)
class Text:
    raw: str
    text: str  # decoded


Item = Text | Inline
Piece = str | list[Item]  # skeleton copied verbatim, or a block


def mixed_content(tokens: Sequence[Token]) -> set[int]:
    """Indexes of the XML start tags whose parent element (or the top level) holds non-blank text itself."""
    frames: list[tuple[bool, list[int]]] = [(False, [])]
    inline: set[int] = set()

    def pop() -> None:
        has_text, children = frames.pop()
        if has_text:
            inline.update(children)

    for index, token in enumerate(tokens):
        if token.kind is Kind.TEXT and token.text.strip():
            frames[-1] = (True, frames[-1][1])
        elif token.kind in (Kind.START, Kind.EMPTY):
            frames[-1][1].append(index)
            if token.kind is Kind.START:
                frames.append((False, []))
        elif token.kind is Kind.END and len(frames) > 1:
            pop()
    while frames:
        pop()
    return inline


class _Walker:
    def __init__(self, tokens: Sequence[Token], options: MarkupOptions) -> None:
        self._tokens = tokens
        self._options = options
        self._html = options.mode == "html"
        self._inline = set() if self._html else mixed_content(tokens)
        self._stack: list[tuple[str, bool]] = []  # open elements: (name, splits)
        self._block: list[Item] = []
        self.pieces: list[Piece] = []

    def _skeleton(self, raw: str) -> None:
        if self._block:
            self.pieces.append(self._block)
            self._block = []
        if self.pieces and isinstance(self.pieces[-1], str):
            self.pieces[-1] += raw
        else:
            self.pieces.append(raw)

    def _splits(self, index: int, name: str) -> bool:
        if name in self._options.splitting_tags:
            return True
        if name in self._options.non_splitting_tags:
            return False
        if self._html:
            return name not in _HTML_INLINE
        return self._options.outline_detection and index not in self._inline

    def _ignored(self, token: Token) -> bool:
        classes = (token.attr("class") or "").split()
        return (token.name in self._options.ignore_tags or (self._html and token.name in _HTML_SKIPPED)
                or (token.attr("translate") or "").strip().lower() == "no" or "notranslate" in classes)

    def _element_end(self, index: int) -> int:
        """The index after the end tag that closes the start tag at `index` (or where its parent closes)."""
        name, depth = self._tokens[index].name, 0
        ancestors = {open_name for open_name, _ in self._stack}
        for at in range(index, len(self._tokens)):
            token = self._tokens[at]
            if token.kind is Kind.START and token.name == name:
                depth += 1
            elif token.kind is Kind.END and token.name == name:
                depth -= 1
                if depth == 0:
                    return at + 1
            elif token.kind is Kind.END and token.name in ancestors:
                return at  # HTML left it open: its parent's end tag ends it
        return len(self._tokens)

    def _tag(self, raw: str, splits: bool, role: Role, name: str = "") -> None:
        if splits:
            self._skeleton(raw)
        else:
            self._block.append(Inline(raw, role, name))

    def _close(self, index: int, token: Token) -> None:
        names = [name for name, _ in self._stack]
        if token.name not in names:  # a stray end tag
            self._tag(token.raw, self._splits(index, token.name), Role.POINT)
            return
        at = len(names) - 1 - names[::-1].index(token.name)
        splits = self._stack[at][1]
        del self._stack[at:]
        self._tag(token.raw, splits, Role.CLOSE, token.name)

    def walk(self) -> list[Piece]:
        index = 0
        while index < len(self._tokens):
            token = self._tokens[index]
            void = token.kind is Kind.EMPTY or (self._html and token.name in _HTML_VOID)
            if token.kind is Kind.TEXT:
                self._block.append(Text(token.raw, token.text))
            elif token.kind in (Kind.START, Kind.EMPTY) and void:
                self._tag(token.raw, self._splits(index, token.name), Role.POINT)
            elif token.kind is Kind.START and self._ignored(token):
                end = self._element_end(index)
                self._tag("".join(t.raw for t in self._tokens[index:end]), self._splits(index, token.name),
                          Role.POINT)
                index = end
                continue
            elif token.kind is Kind.START:
                splits = self._splits(index, token.name)
                self._stack.append((token.name, splits))
                self._tag(token.raw, splits, Role.OPEN, token.name)
            elif token.kind is Kind.END:
                self._close(index, token)
            else:
                self._tag(token.raw, token.kind is Kind.DECLARATION, Role.POINT)
            index += 1
        if self._block:
            self.pieces.append(self._block)
        return self.pieces


def segment(tokens: Sequence[Token], options: MarkupOptions) -> list[Piece]:
    """The document as skeleton strings and blocks, in order; their raw text joins back to the input."""
    return _Walker(tokens, options).walk()
