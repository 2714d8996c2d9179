"""Document codecs: take a file apart into translatable segments and put it back together.

Each codec is pure bytes in, bytes out; `rebuild(data, translations)` walks the file in exactly the order
`extract(data)` did, so translation i replaces segment i. Whitespace-only text is never a segment.

- txt: one segment per non-blank line (not per paragraph), so line breaks, blank lines, indentation and the
  line-ending style survive exactly.
- html: tag handling as /v2/translate's tag_handling=html does it (`peakgate.markup`, docs/markup.md): one
  segment per sentence, across inline markup (<b>, <a>), which is put back around the translated words, plus
  each inline-tagged phrase once more on its own to place its tags; <script>, <style>, translate="no" and
  class="notranslate" are left alone; tags, attributes, comments and entities outside translated text are
  copied byte for byte. Attribute text (alt, title) is not translated.
- docx: paragraphs (body, tables, nested tables, text boxes; not headers or footers) are translated sentence by
  sentence, their runs of one character formatting acting as inline tags (`markup.runs`): a bold or italic
  phrase is translated on its own too, and its run gets the words of the translation it maps to, so formatting
  changes inside a paragraph survive. Hyperlink text is left as it is.
"""

from __future__ import annotations

import io
import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Protocol

from docx import Document
from docx.document import Document as DocxDocument
from docx.oxml.ns import qn
from docx.text.paragraph import Paragraph
from docx.text.run import Run

from peakgate.errors import BadRequest
from peakgate.markup.document import MarkupDocument, parse_markup
from peakgate.markup.options import MarkupOptions
from peakgate.markup.runs import runs_document, spread

_BOM = b"\xef\xbb\xbf"
_LINE = re.compile(r"^(\s*)(.*?)(\s*)$", re.DOTALL)
_HTML = MarkupOptions("html")


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


class HtmlCodec:
    name = "html"
    content_type = "text/html; charset=utf-8"

    def _document(self, data: bytes) -> tuple[MarkupDocument, bool]:
        text, bom = _decode(data, "HTML")
        return parse_markup(text, _HTML), bom

    def extract(self, data: bytes) -> list[str]:
        return self._document(data)[0].texts()

    def rebuild(self, data: bytes, translations: list[str]) -> bytes:
        document, bom = self._document(data)
        texts = document.texts()
        _check_count(len(texts), translations)
        return _encode(document.rebuild(dict(zip(texts, translations, strict=True))), bom)


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


def _format_groups(paragraph: Paragraph) -> list[list[Run]]:
    """Consecutive runs with the same character formatting (Word splits runs for revisions and spell checks)."""
    groups: list[list[Run]] = []
    last: str | None = None
    for run in paragraph.runs:
        properties = run.element.rPr
        key = "" if properties is None else properties.xml
        if groups and key == last:
            groups[-1].append(run)
        else:
            groups.append([run])
        last = key
    return groups


def _group_texts(groups: list[list[Run]]) -> list[str]:
    return ["".join(run.text for run in group) for group in groups]


class DocxCodec:
    name = "docx"
    content_type = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"

    def _parts(self, data: bytes) -> tuple[DocxDocument, list[tuple[list[list[Run]], MarkupDocument]], list[str]]:
        document, paragraphs = _paragraphs(data)
        parts = [(groups, runs_document(_group_texts(groups))) for groups in map(_format_groups, paragraphs)]
        return document, parts, list(dict.fromkeys(text for _, marked in parts for text in marked.texts()))

    def extract(self, data: bytes) -> list[str]:
        return self._parts(data)[2]

    def rebuild(self, data: bytes, translations: list[str]) -> bytes:
        document, parts, texts = self._parts(data)
        _check_count(len(texts), translations)
        translated = dict(zip(texts, translations, strict=True))
        for groups, marked in parts:
            for group, text in zip(groups, spread(marked, len(groups), translated), strict=True):
                group[0].text = text
                for run in group[1:]:
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
