"""Document codecs: extract → translate (upper-case) → rebuild keeps the structure around the text."""

from __future__ import annotations

import io
import zipfile

import pytest
from docx import Document

from peakgate.jobs.formats import UnsupportedDocument, codec_for, codec_named


def _upper(segments: list[str]) -> list[str]:
    return [s.upper() for s in segments]


def test_text_round_trip_keeps_blank_lines_indent_and_line_endings() -> None:
    data = b"Hello world\r\n\r\n  indented line  \r\nlast"
    codec = codec_named("txt")
    segments = codec.extract(data)
    assert segments == ["Hello world", "indented line", "last"]
    assert codec.rebuild(data, _upper(segments)) == b"HELLO WORLD\r\n\r\n  INDENTED LINE  \r\nLAST"


def test_text_keeps_a_bom_and_refuses_non_utf8() -> None:
    codec = codec_named("txt")
    data = b"\xef\xbb\xbfcaf\xc3\xa9\n"
    assert codec.rebuild(data, _upper(codec.extract(data))) == b"\xef\xbb\xbfCAF\xc3\x89\n"
    with pytest.raises(UnsupportedDocument, match="not valid UTF-8"):
        codec.extract(b"caf\xe9")


def test_html_translates_sentences_across_inline_tags() -> None:
    page = ('<!DOCTYPE html><html><head><title>My page</title><style>p { color: red }</style></head>\n'
            '<body class="x"><p title="keep me">Hello <b>bold</b> &amp; done</p>\n'
            '<script>var s = "no";</script><!-- a comment --><img alt="pic"/>\n'
            '  <p>\n  two\n  lines\n</p><p translate="no">keep</p></body></html>')
    codec = codec_named("htm")
    segments = codec.extract(page.encode())
    assert segments == ["My page", "Hello bold & done", "two lines", "bold"]  # the tagged phrase last
    out = codec.rebuild(page.encode(), _upper(segments)).decode()
    assert out == page.replace("My page", "MY PAGE").replace("Hello <b>bold</b> &amp; done",
                                                             "HELLO <b>BOLD</b> &amp; DONE").replace(
        "\n  two\n  lines\n", "\n  TWO LINES\n")


def test_html_keeps_a_bom_and_moves_tags_with_their_words() -> None:
    codec = codec_named("html")
    data = "\ufeff<p>The <b>red car</b> is fast.</p>".encode()
    assert codec.extract(data) == ["The red car is fast.", "red car"]
    out = codec.rebuild(data, ["El coche rojo es rápido.", "coche rojo"])
    assert out == "\ufeff<p>El <b>coche rojo</b> es rápido.</p>".encode()


def test_html_escapes_markup_in_translations() -> None:
    codec = codec_named("html")
    assert codec.rebuild(b"<p>x</p>", ["a < b"]) == b"<p>a &lt; b</p>"


def _docx() -> bytes:
    document = Document()
    paragraph = document.add_paragraph("Hello ")
    paragraph.add_run("bold").bold = True
    document.add_paragraph("")
    table = document.add_table(rows=1, cols=2)
    table.cell(0, 0).text = "cell one"
    table.cell(0, 1).text = "cell two"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def test_docx_round_trip_translates_paragraphs_and_table_cells() -> None:
    codec = codec_named("docx")
    data = _docx()
    segments = codec.extract(data)
    assert segments == ["Hello bold", "Hello", "bold", "cell one", "cell two"]  # then each formatted phrase
    rebuilt = codec.rebuild(data, _upper(segments))
    assert codec.extract(rebuilt)[0] == "HELLO BOLD"
    document = Document(io.BytesIO(rebuilt))
    first = document.paragraphs[0]
    assert [(run.text, run.bold) for run in first.runs] == [("HELLO ", None), ("BOLD", True)]
    assert document.tables[0].cell(0, 1).text == "CELL TWO"


def test_docx_formatting_follows_the_words_it_was_on() -> None:
    document = Document()
    paragraph = document.add_paragraph("The ")
    paragraph.add_run("red car").italic = True
    paragraph.add_run(" is ")
    paragraph.add_run("very").bold = True
    paragraph.add_run(" ")
    paragraph.add_run("fast.").bold = True  # same formatting as "very", split by a plain run
    buffer = io.BytesIO()
    document.save(buffer)
    codec = codec_named("docx")
    segments = codec.extract(buffer.getvalue())
    table = {"The red car is very fast.": "El coche rojo es muy rápido.", "The": "El", "red car": "coche rojo",
             "is": "es", "very": "muy", "fast.": "rápido."}
    assert sorted(segments) == sorted(table)
    rebuilt = Document(io.BytesIO(codec.rebuild(buffer.getvalue(), [table[s] for s in segments])))
    runs = rebuilt.paragraphs[0].runs
    assert "".join(run.text for run in runs) == "El coche rojo es muy rápido."
    assert [run.text.strip() for run in runs if run.italic] == ["coche rojo"]
    assert [run.text.strip() for run in runs if run.bold] == ["muy", "rápido."]


def test_corrupt_docx_is_a_bad_request() -> None:
    with pytest.raises(UnsupportedDocument, match=r"not a readable \.docx"):
        codec_named("docx").extract(b"not a zip at all")
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("hello.txt", "a zip, but no Word document")
    with pytest.raises(UnsupportedDocument):
        codec_named("docx").extract(buffer.getvalue())


def test_factory_by_extension_then_content_type() -> None:
    assert codec_for("Report.HTM").name == "html"
    assert codec_for("notes.txt", "application/octet-stream").name == "txt"
    assert codec_for(None, "text/html; charset=utf-8").name == "html"
    assert codec_for("blob", "application/vnd.openxmlformats-officedocument.wordprocessingml.document").name == "docx"
    with pytest.raises(UnsupportedDocument, match="unsupported document format 'pdf'"):
        codec_for("scan.pdf")
    with pytest.raises(UnsupportedDocument, match="cannot tell the format"):
        codec_for("noextension", "application/octet-stream")


def test_rebuild_refuses_a_wrong_number_of_translations() -> None:
    with pytest.raises(ValueError, match="1 translations for 2 segments"):
        codec_named("txt").rebuild(b"a\nb", ["A"])
