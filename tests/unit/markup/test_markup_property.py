"""Property: any well-formed HTML keeps its exact tag sequence through translation, whatever the translator."""

from __future__ import annotations

from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from peakgate.markup.document import parse_markup
from peakgate.markup.options import markup_options
from peakgate.markup.tokens import Kind, tokenize

_WORDS = st.sampled_from(["the", "Cat", "sat.", "on", "a", "mat!", "x", "1", "&amp;", "&lt;", "&nbsp;", "&#233;",
                          " ", "\n", "big dog", "Yes?"])
_INLINE = st.sampled_from(["b", "i", "a", "span", "em", "code"])
_BLOCK = st.sampled_from(["p", "div", "li", "h1", "td"])
_ATTRS = st.sampled_from(["", ' class="c"', ' href="/a?b=1&amp;c=2"', ' translate="no"', " title='t &quot;q'",
                          ' class="notranslate"'])
_VOID = st.sampled_from(["<br>", "<img src=x.png>", "<br/>", "<!-- note -->", "<hr>"])


def _element(tags: st.SearchStrategy[str], children: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    return st.tuples(tags, _ATTRS, st.lists(children, max_size=4)).map(
        lambda t: f"<{t[0]}{t[1]}>{''.join(t[2])}</{t[0]}>")


_HTML = st.recursive(
    st.one_of(_WORDS, _VOID),
    lambda inner: st.one_of(_element(_INLINE, inner), _element(_BLOCK, inner), st.lists(inner, max_size=4).map(
        "".join)),
    max_leaves=25,
)

_TRANSLATORS: st.SearchStrategy[Callable[[str], str]] = st.sampled_from([
    str.upper,
    lambda s: " ".join(reversed(s.split())),  # word order changes
    lambda s: s[: len(s) // 2],  # much shorter
    lambda s: f"{s} <{s}> & more words here",  # longer, with characters that must be escaped
    lambda s: "",
])


def _markup(text: str) -> list[str]:
    return [t.raw for t in tokenize(text) if t.kind is not Kind.TEXT]


def _visible(text: str) -> str:
    return " ".join("".join(t.text for t in tokenize(text) if t.kind is Kind.TEXT).split())


@settings(max_examples=100, deadline=None)
@given(_HTML, _TRANSLATORS)
def test_random_html_keeps_its_tag_sequence(document: str, translate: Callable[[str], str]) -> None:
    parsed = parse_markup(document, markup_options("html"))
    out = parsed.rebuild({text: translate(text) for text in parsed.texts()})
    assert _markup(out) == _markup(document)
    if not parsed.texts():
        assert out == document


@settings(max_examples=100, deadline=None)
@given(_HTML)
def test_an_identity_translation_keeps_the_visible_text(document: str) -> None:
    parsed = parse_markup(document, markup_options("html"))
    out = parsed.rebuild({text: text for text in parsed.texts()})
    assert _visible(out) == _visible(document)
