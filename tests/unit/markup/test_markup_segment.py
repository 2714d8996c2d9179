"""Segmenting: which tags split sentences, which are inline, and what is never translated."""

from __future__ import annotations

from peakgate.markup.document import parse_markup
from peakgate.markup.options import MarkupOptions, markup_options
from peakgate.markup.sentences import Sentence


def _sentences(text: str, options: MarkupOptions) -> list[Sentence]:
    return parse_markup(text, options).sentences


def _sources(text: str, options: MarkupOptions) -> list[str]:
    return [s.source for s in _sentences(text, options)]


HTML = markup_options("html")
XML = markup_options("xml")


def test_html_inline_tags_stay_inside_a_sentence_and_blocks_split() -> None:
    text = '<div><p>Press <b>Continue</b> to <a href="/x">go on</a>.</p><p>Next\n  one.</p></div>'
    assert _sources(text, HTML) == ["Press Continue to go on.", "Next one."]  # newlines do not split
    first = _sentences(text, HTML)[0]
    assert [t.raw for t in first.tags] == ["<b>", "</b>", '<a href="/x">', "</a>"]
    assert [t.offset for t in first.tags] == [6, 14, 18, 23]
    assert [t.partner for t in first.tags] == [1, 0, 3, 2]


def test_a_block_is_cut_into_sentences_and_br_splits() -> None:
    assert _sources("<p>One thing. Another thing!<br>Third</p>", HTML) == ["One thing.", "Another thing!", "Third"]


def test_splitting_and_non_splitting_tags_override_the_defaults() -> None:
    options = markup_options("html", splitting_tags="b", non_splitting_tags=["div"])
    assert _sources("<p>Hello <b>big</b> world</p>", options) == ["Hello", "big", "world"]
    assert _sources("Hello <div>big</div> world", options) == ["Hello big world"]


def test_ignored_elements_are_never_translated() -> None:
    text = ('<p translate="no">Keep me.</p><p class="x notranslate">Me too.</p><code>code()</code>'
            '<script>var s = "No";</script><style>p{}</style><p>Call <span translate="no">ACME</span> now.</p>')
    options = markup_options("html", ignore_tags="code")
    assert _sources(text, options) == ["Call now."]
    (call,) = _sentences(text, options)
    assert [t.raw for t in call.tags] == ['<span translate="no">ACME</span>']  # one inline item, kept whole


def test_text_without_letters_is_not_translated() -> None:
    assert _sources("<p>2024 — 12:30</p><p>&nbsp;</p>", HTML) == []


def test_xml_outline_detection_finds_structure_and_mixed_content() -> None:
    text = ("<document><meta><title>A title</title></meta><content>"
            "<par>This is <b>bold</b>. Second one.</par><par>Third.</par></content></document>")
    assert _sources(text, XML) == ["A title", "This is bold.", "Second one.", "Third."]
    off = markup_options("xml", outline_detection=False, splitting_tags="par,title")
    assert _sources(text, off) == ["A title", "This is bold.", "Second one.", "Third."]
    nothing_splits = markup_options("xml", outline_detection=False)
    assert _sources("<a><x>One</x> <y>two</y></a>", nothing_splits) == ["One two"]
    assert _sources("<a><x>One</x><y>two</y></a>", XML) == ["One", "two"]


def test_xml_tag_names_are_case_sensitive_and_html_ones_are_not() -> None:
    assert _sources("<r>a <B>word</B> here</r>", markup_options("xml", splitting_tags="b")) == ["a word here"]
    assert _sources("<p>a <B>word</B> here</p>", markup_options("html", splitting_tags="b")) == ["a", "word",
                                                                                                   "here"]
