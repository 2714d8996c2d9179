"""Rebuilding: the skeleton comes back byte for byte, translated text is escaped, inline tags are put back."""

from __future__ import annotations

import pytest

from peakgate.markup.document import parse_markup
from peakgate.markup.options import MarkupOptions, markup_options
from peakgate.markup.tokens import Kind, tokenize
from peakgate.markup.xmlcheck import MalformedMarkup

HTML = markup_options("html")
XML = markup_options("xml")


def _upper(text: str, options: MarkupOptions = HTML) -> str:
    document = parse_markup(text, options)
    return document.rebuild({t: t.upper() for t in document.texts()})


def _translated(text: str, table: dict[str, str], options: MarkupOptions = HTML) -> str:
    document = parse_markup(text, options)
    assert set(document.texts()) == set(table)
    return document.rebuild(table)


def _markup(text: str) -> list[str]:
    return [t.raw for t in tokenize(text) if t.kind is not Kind.TEXT]


PAGE = ('<!DOCTYPE html>\n<html lang="en"><head><title>My page</title><style>p { color: red }</style></head>\n'
        '<body class="x"><p title="keep me">Hello <b>bold</b> &amp; done. <!-- note --></p>\n'
        '<script>var s = "<b>no</b>";</script><img alt="pic"/>\n'
        '  <p translate="no">Stay &copy; as is</p><p>\n  two\n  lines\n</p></body></html>')


def test_skeleton_comes_back_byte_for_byte_around_upper_cased_text() -> None:
    out = _upper(PAGE)
    assert out == PAGE.replace("My page", "MY PAGE").replace(
        "Hello <b>bold</b> &amp; done.", "HELLO <b>BOLD</b> &amp; DONE.").replace("\n  two\n  lines\n",
                                                                                  "\n  TWO LINES\n")
    assert _markup(out) == _markup(PAGE)


def test_entities_are_decoded_for_translation_and_kept_where_not_translated() -> None:
    document = parse_markup("<td>&nbsp;Fish &amp; chips&#33;&nbsp;</td>", HTML)
    assert document.texts() == ["Fish & chips!"]
    assert document.rebuild({"Fish & chips!": "Pescado & patatas <frito>!"}) == (
        "<td>&nbsp;Pescado &amp; patatas &lt;frito&gt;!&nbsp;</td>")


def test_tags_follow_the_separately_translated_span_when_words_move() -> None:
    table = {"The red car is fast.": "El coche rojo es rápido.", "red car": "coche rojo"}
    assert _translated("<p>The <b>red car</b> is fast.</p>", table) == "<p>El <b>coche rojo</b> es rápido.</p>"
    moved = {"Click the red button.": "Pulse el botón rojo.", "red": "rojo"}
    assert _translated("Click the <i>red</i> button.", moved) == "Pulse el botón <i>rojo</i>."


def test_tags_fall_back_to_proportional_word_placement() -> None:
    table = {"Press Continue to go.": "Pulse Seguir para ir.", "Continue": "Continuar"}  # not in the sentence
    assert _translated("Press <b>Continue</b> to go.", table) == "Pulse <b>Seguir</b> para ir."


def test_a_name_left_untranslated_anchors_its_tags() -> None:
    table = {"Ask Alice now.": "Pregunta ahora a Alice.", "Alice": "Alicia"}
    assert _translated("Ask <a href='#'>Alice</a> now.", table) == "Pregunta ahora a <a href='#'>Alice</a>."


def test_nested_and_adjacent_tags_keep_their_order_and_nesting() -> None:
    text = "<p>Go <b>to <i>the</i> shop</b><sup>1</sup> today.</p>"
    out = _upper(text)
    assert out == "<p>GO <b>TO <i>THE</i> SHOP</b><sup>1</sup> TODAY.</p>"
    short = parse_markup(text, HTML)
    rebuilt = short.rebuild({t: "x" for t in short.texts()})
    assert _markup(rebuilt) == _markup(text)


def test_a_sentence_boundary_inside_an_inline_element() -> None:
    text = "<p><b>First one. Second</b> one.</p>"
    assert parse_markup(text, HTML).texts() == ["First one.", "Second one."]  # <b>…</b> spans both
    assert _upper(text) == "<p><b>FIRST ONE. SECOND</b> ONE.</p>"


def test_xml_round_trip_keeps_declaration_cdata_and_attributes() -> None:
    text = ('<?xml version="1.0" encoding="UTF-8"?>\n<doc id="7"><par>Read <ref to="a&amp;b">this</ref> now.'
            '</par><![CDATA[raw <text>]]><par xml:lang="en">Fine &amp; dandy.</par></doc>')
    assert _upper(text, XML) == text.replace("Read <ref", "READ <ref").replace(">this</ref> now.",
                                                                              ">THIS</ref> NOW.").replace(
        "Fine &amp; dandy.", "FINE &amp; DANDY.")


@pytest.mark.parametrize(("text", "complaint"), [
    ("<a><b></a>", "mismatched tag (line 1, column 9)"),
    ("caf&eacute;", "undefined entity"),
    ("1 < 2", "not well-formed"),
    ("<br>", "mismatched tag"),
])
def test_malformed_xml_is_refused_naming_the_error(text: str, complaint: str) -> None:
    with pytest.raises(MalformedMarkup, match="Tag handling parsing failed") as caught:
        parse_markup(text, XML)
    assert complaint in caught.value.message


def test_xml_fragments_and_documents_are_accepted() -> None:
    for text in ["Press <b>Continue</b>.", "<a/><b/>", '<?xml version="1.0"?><!DOCTYPE d><d>x</d>', "plain"]:
        assert parse_markup(text, XML) is not None


def test_a_phrase_inflected_otherwise_in_the_sentence_still_anchors_its_tags() -> None:
    table = {"Delete the selected files.": "Eliminar los archivos seleccionados.", "selected": "seleccionado"}
    assert _translated("Delete the <em>selected</em> files.", table) == (
        "Eliminar los archivos <em>seleccionados</em>.")
    short = {"Open it now.": "Ábrelo ya.", "it": "lo"}  # too short to match loosely: placed by proportion
    assert _markup(_translated("Open <em>it</em> now.", short)) == ["<em>", "</em>"]
