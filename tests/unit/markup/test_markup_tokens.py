"""The tokenizer: exact spans that tile the input, decoded text, and opaque tokens for swallowed markup."""

from __future__ import annotations

import pytest

from peakgate.markup.tokens import Kind, tokenize

SOURCES = [
    "",
    "plain text",
    '<!DOCTYPE html><p class="a">Hi &amp; <b>bye</b><!-- c --><br/></p>',
    '<?xml version="1.0"?><doc><![CDATA[x < y]]><t a="1"/></doc>',
    "a < b and <unclosed",
    "</>stray",
]


@pytest.mark.parametrize("source", SOURCES)
def test_tokens_tile_the_input_exactly(source: str) -> None:
    assert "".join(token.raw for token in tokenize(source)) == source
    assert "".join(token.raw for token in tokenize(source, xml=True)) == source


def test_kinds_names_attributes_and_decoded_text() -> None:
    tokens = tokenize('<P Title="x &amp; y">Fish &amp; chips</P><br/><!-- note -->')
    assert [t.kind for t in tokens] == [Kind.START, Kind.TEXT, Kind.END, Kind.EMPTY, Kind.COMMENT]
    assert [t.name for t in tokens] == ["p", "", "p", "br", ""]  # HTML names fold to lower case
    assert tokens[0].attr("title") == "x & y"
    assert (tokens[1].raw, tokens[1].text) == ("Fish &amp; chips", "Fish & chips")


def test_xml_keeps_name_case_and_treats_script_as_an_element() -> None:
    tokens = tokenize("<Doc><script>a <b>c</b></script></Doc>", xml=True)
    assert [t.name for t in tokens if t.kind is Kind.START] == ["Doc", "script", "b"]
    html_tokens = tokenize("<script>a <b>c</b></script>")
    assert [t.kind for t in html_tokens] == [Kind.START, Kind.TEXT, Kind.END]  # script content is raw text


def test_markup_the_parser_swallows_is_kept_opaque_not_translated() -> None:
    assert [(t.kind, t.raw) for t in tokenize("x</>y")] == [(Kind.COMMENT, "x</>y")]
    assert [(t.kind, t.raw) for t in tokenize("</>y")] == [(Kind.COMMENT, "</>"), (Kind.TEXT, "y")]
