"""Document codecs: take a file apart into translatable segments and put it back together.

Each codec is pure bytes in, bytes out; `rebuild(data, translations)` walks the file in exactly the order
`extract(data)` did, so translation i replaces segment i. Whitespace-only text is never a segment.

- txt: one segment per non-blank line (not per paragraph), so line breaks, blank lines, indentation and the
  line-ending style survive exactly.
- html: one segment per text node outside <script>/<style>; tags, attributes, comments and entities outside
  text nodes are copied byte for byte. Attribute text (alt, title) is not translated, and inline markup
  (<b>, <a>) splits a sentence into separate segments.
- docx: one segment per paragraph (body, tables, nested tables, text boxes; not headers or footers). The
  translated paragraph goes into its first run and the other runs are emptied, so the paragraph keeps the first
  run's character formatting and loses mid-paragraph formatting changes. Hyperlink text is left as it is.
"""

from __future__ import annotations

import html
import io
import re
from collections.abc import Mapping
from html.parser import HTMLParser
from types import MappingProxyType
from typing import Protocol

from docx import Document
from docx.document import Document as DocxDocument
from docx.oxml.ns import qn
from docx.text.paragraph import Paragraph

from peakgate.errors import BadRequest

_BOM = b"\xef\xbb\xbf"
_LINE = re.compile(r"^(\s*)(.*?)(\s*)$", re.DOTALL)
_SKIPPED_TAGS = frozenset({"script", "style"})


class UnsupportedDocument(BadRequest):
    """The file's format is not one we translate, or the file cannot be read as its format."""

    code = "unsupported_document"


class DocumentCodec(Protocol):
    name: str  # "txt", "html", "docx": the stored format and the download's extension
    content_type: str

    def extract(self, data: bytes) -> list[str]: ...

    def rebuild(self, data: bytes, translations: list[str]) -> bytes: ...


def _decode(data: bytes, what: str) -> tuple[str, bool]:
    bom = data.startswith(_BOM)
    try:
        return data[len(_BOM) if bom else 0:].decode("utf-8"), bom
    except UnicodeDecodeError as exc:
        raise UnsupportedDocument(f"the {what} file is not valid UTF-8: {exc.reason} at byte {exc.start}") from exc


def _encode(text: str, bom: bool) -> bytes:
    return (_BOM if bom else b"") + text.encode("utf-8")


def _check_count(segments: int, translations: list[str]) -> None:
    if segments != len(translations):
        raise ValueError(f"{len(translations)} translations for {segments} segments")


def _replace_core(raw: str, translation: str) -> str:
    """Swap the non-blank middle of `raw` for `translation`, keeping its leading and trailing whitespace."""
    match = _LINE.match(raw)
    assert match is not None  # the pattern matches every string
    return f"{match.group(1)}{translation}{match.group(3)}"


class TextCodec:
    name = "txt"
    content_type = "text/plain; charset=utf-8"

    def extract(self, data: bytes) -> list[str]:
        text, _ = _decode(data, "text")
        return [line.strip() for line in text.splitlines() if line.strip()]

    def rebuild(self, data: bytes, translations: list[str]) -> bytes:
        text, bom = _decode(data, "text")
        lines = text.splitlines(keepends=True)
        _check_count(sum(1 for line in lines if line.strip()), translations)
        pending = iter(translations)
        out = [_replace_core(line, next(pending)) if line.strip() else line for line in lines]
        return _encode("".join(out), bom)


class _TextNodes(HTMLParser):
    """Finds the [start, end) character span of every text node, outside script and style."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._skip_depth = 0
        self._open: int | None = None  # start of the text node being read
        self.spans: list[tuple[int, int]] = []
        self.feed(text)
        self.close()
        self._end_text(len(text))

    def _offset(self) -> int:
        line, column = self.getpos()
        return self._line_starts[line - 1] + column

    def _end_text(self, end: int) -> None:
        if self._open is not None:
            self.spans.append((self._open, end))
            self._open = None

    def _markup(self) -> None:
        # Every markup event ends the text node before it.
        self._end_text(self._offset())

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._markup()
        if tag in _SKIPPED_TAGS:
            self._skip_depth += 1

    def handle_endtag(self, tag: str) -> None:
        self._markup()
        if tag in _SKIPPED_TAGS and self._skip_depth:
            self._skip_depth -= 1

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._markup()

    def handle_comment(self, data: str) -> None:
        self._markup()

    def handle_decl(self, decl: str) -> None:
        self._markup()

    def handle_pi(self, data: str) -> None:
        self._markup()

    def unknown_decl(self, data: str) -> None:
        self._markup()

    def handle_data(self, data: str) -> None:
        if self._skip_depth == 0 and self._open is None:
            self._open = self._offset()


class HtmlCodec:
    name = "html"
    content_type = "text/html; charset=utf-8"

    def _nodes(self, data: bytes) -> tuple[str, bool, list[tuple[int, int]]]:
        text, bom = _decode(data, "HTML")
        spans = [(a, b) for a, b in _TextNodes(text).spans if html.unescape(text[a:b]).strip()]
        return text, bom, spans

    def extract(self, data: bytes) -> list[str]:
        text, _, spans = self._nodes(data)
        return [" ".join(html.unescape(text[a:b]).split()) for a, b in spans]

    def rebuild(self, data: bytes, translations: list[str]) -> bytes:
        text, bom, spans = self._nodes(data)
        _check_count(len(spans), translations)
        out: list[str] = []
        done = 0
        for (start, end), translation in zip(spans, translations, strict=True):
            out.append(text[done:start])
            out.append(_replace_core(text[start:end], html.escape(translation, quote=False)))
            done = end
        out.append(text[done:])
        return _encode("".join(out), bom)


def _paragraphs(data: bytes) -> tuple[DocxDocument, list[Paragraph]]:
    try:
        document = Document(io.BytesIO(data))
        body = document.element.body
        # Walking every w:p (not just document.paragraphs) reaches table cells, nested tables and text boxes.
        paragraphs = [Paragraph(p, document._body) for p in body.iter(qn("w:p"))]
    except Exception as exc:  # python-docx surfaces corrupt input as zip, lxml, KeyError or its own errors
        raise UnsupportedDocument(f"the file is not a readable .docx document: {exc}") from exc
    return document, [p for p in paragraphs if _runs_text(p).strip()]


def _runs_text(paragraph: Paragraph) -> str:
    return "".join(run.text for run in paragraph.runs)


class DocxCodec:
    name = "docx"
    content_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

    def extract(self, data: bytes) -> list[str]:
        _, paragraphs = _paragraphs(data)
        return [_runs_text(p).strip() for p in paragraphs]

    def rebuild(self, data: bytes, translations: list[str]) -> bytes:
        document, paragraphs = _paragraphs(data)
        _check_count(len(paragraphs), translations)
        for paragraph, translation in zip(paragraphs, translations, strict=True):
            first, *rest = paragraph.runs
            first.text = _replace_core(_runs_text(paragraph), translation)
            for run in rest:
                run.text = ""
        out = io.BytesIO()
        document.save(out)
        return out.getvalue()


_CODECS: Mapping[str, DocumentCodec] = MappingProxyType({"txt": TextCodec(), "html": HtmlCodec(),
                                                         "docx": DocxCodec()})
_EXTENSIONS = MappingProxyType({"txt": "txt", "text": "txt", "html": "html", "htm": "html", "docx": "docx"})
_CONTENT_TYPES = MappingProxyType({"text/plain": "txt", "text/html": "html", DocxCodec.content_type: "docx"})


def codec_named(name: str) -> DocumentCodec:
    """The codec for a stored format name or an extension ("htm" → html)."""
    codec = _CODECS.get(_EXTENSIONS.get(name.strip().lower().lstrip("."), ""))
    if codec is None:
        raise UnsupportedDocument(f"unsupported document format {name!r}: use one of .txt, .html, .htm, .docx")
    return codec


def codec_for(filename: str | None, content_type: str | None = None) -> DocumentCodec:
    """The factory: by the file name's extension, else by the upload's content type."""
    if filename and "." in filename:
        return codec_named(filename.rsplit(".", 1)[1])
    media_type = (content_type or "").partition(";")[0].strip().lower()
    if media_type in _CONTENT_TYPES:
        return _CODECS[_CONTENT_TYPES[media_type]]
    raise UnsupportedDocument(f"cannot tell the format of {filename or 'the upload'!r}: "
                              "name it with a .txt, .html, .htm or .docx extension")
