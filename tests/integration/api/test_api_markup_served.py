"""Tag handling on the real server and engines, called by the real `deepl` SDK and `libretranslatepy`.

The markup (every tag, attribute, comment and entity outside translated text) must come back byte for byte,
the text around it translated by the real default engines.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import deepl
import httpx
import pytest
from libretranslatepy import LibreTranslateAPI

from bench._http import Server, serve
from peakgate.markup.tokens import Kind, tokenize

KEY = "it-markup-key"
CONFIG: dict[str, object] = {"keys": [{"key": KEY, "tenant": "acme", "priority_class": "interactive"}]}

HTML = ('<!DOCTYPE html>\n<html lang="en"><body class="page">\n'
        '<h1 id="t">Save the document</h1>\n'
        '<p title="do not touch">Open the <b class="x">file</b> &amp; close the window.</p>\n'
        '<p translate="no">Open the file</p>\n'
        '<p>Delete the <code>selected</code> files.</p><!-- a comment -->\n'
        '<script>var s = "Open the file";</script>\n</body></html>')
XML = ('<?xml version="1.0" encoding="UTF-8"?>\n<doc version="2">\n'
       '  <title>Save the document</title>\n'
       '  <par>Open the <b>file</b> &amp; close the window.</par>\n'
       '  <skip>Open the file</skip>\n'
       '  <par note="a &lt; b">Delete the selected files.</par>\n</doc>')


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(CONFIG) as running:
        yield running


def _markup(text: str) -> list[str]:
    return [t.raw for t in tokenize(text) if t.kind is not Kind.TEXT]


def _text_of(text: str, open_tag: str, close_tag: str) -> str:
    start = text.index(open_tag) + len(open_tag)
    return text[start:text.index(close_tag, start)]


def test_deepl_sdk_html_round_trip_keeps_every_tag_and_translates_the_text(server: Server) -> None:
    translator = deepl.Translator(KEY, server_url=server.url)
    result = translator.translate_text(HTML, source_lang="EN", target_lang="ES", tag_handling="html",
                                       ignore_tags="code")
    out = result.text
    assert _markup(out) == _markup(HTML)  # tags, attributes, comments, doctype: byte for byte, in order
    assert '<p translate="no">Open the file</p>' in out
    assert '<script>var s = "Open the file";</script>' in out
    assert "<code>selected</code>" in out
    assert "documento" in _text_of(out, '<h1 id="t">', "</h1>").lower()
    paragraph = _text_of(out, '<p title="do not touch">', "</p>")
    assert "&amp;" in paragraph and "Open" not in paragraph
    assert re.search(r'<b class="x">\w', paragraph)  # the bold tag still wraps a word
    assert result.detected_source_lang == "EN"


def test_deepl_sdk_xml_round_trip_with_ignore_tags_and_outline_detection(server: Server) -> None:
    translator = deepl.Translator(KEY, server_url=server.url)
    out = translator.translate_text(XML, source_lang="EN", target_lang="ES", tag_handling="xml",
                                    ignore_tags=["skip"]).text
    assert _markup(out) == _markup(XML)
    assert "<skip>Open the file</skip>" in out
    assert "documento" in _text_of(out, "<title>", "</title>").lower()
    assert '<par note="a &lt; b">' in out
    manual = translator.translate_text(XML, source_lang="EN", target_lang="ES", tag_handling="xml",
                                       outline_detection=False, splitting_tags="title,par",
                                       non_splitting_tags="b", ignore_tags="skip").text
    assert _markup(manual) == _markup(XML)


def test_deepl_sdk_refuses_a_bad_tag_handling_and_malformed_xml(server: Server) -> None:
    translator = deepl.Translator(KEY, server_url=server.url)
    with pytest.raises(deepl.DeepLException, match="tag_handling"):
        translator.translate_text("<b>hi</b>", target_lang="ES", tag_handling="bogus")
    reply = httpx.post(f"{server.url}/v2/translate", headers={"Authorization": f"DeepL-Auth-Key {KEY}"},
                       json={"text": ["<b>hi</b>"], "target_lang": "ES", "tag_handling": "bogus"})
    assert reply.status_code == 400
    assert reply.json()["message"].startswith("Parameter 'tag_handling' is invalid")
    with pytest.raises(deepl.DeepLException, match=r"Tag handling parsing failed.*mismatched tag"):
        translator.translate_text("<a><b>Open the file</a>", target_lang="ES", tag_handling="xml")


def test_libretranslatepy_format_html_and_a_bad_format(server: Server) -> None:
    # libretranslatepy 2.1 has no `format` argument; LibreTranslate reads fields from the query string too, so
    # the unmodified client posts to ".../translate?format=html&_=/translate" through its base URL.
    lt = LibreTranslateAPI(f"{server.url}/translate?format=html&_=/", api_key=KEY)
    source = '<p>Save the <a href="/doc?a=1&amp;b=2">document</a></p>'
    out = lt.translate(source, "en", "es")
    assert _markup(out) == _markup(source)
    assert "documento" in out.lower()
    reply = httpx.post(f"{server.url}/translate", json={"q": "x", "source": "en", "target": "es",
                                                        "format": "markdown", "api_key": KEY})
    assert reply.status_code == 400
    assert "markdown" in reply.text


def test_native_api_tag_handling(server: Server) -> None:
    reply = httpx.post(f"{server.url}/v1/translate", headers={"Authorization": f"Bearer {KEY}"},
                       json={"text": "<p>Open the <i>file</i></p>", "source": "en", "target": "es",
                             "tag_handling": "html"})
    assert reply.status_code == 200, reply.text
    out = reply.json()["translations"][0]["text"]
    assert _markup(out) == ["<p>", "<i>", "</i>", "</p>"]
    assert "Open" not in out


def test_deepl_form_body_with_repeated_and_comma_separated_tag_lists(server: Server) -> None:
    text = "<doc><par>Open the file</par><skip>Open the file</skip><code>Open the file</code></doc>"
    reply = httpx.post(f"{server.url}/v2/translate", headers={"Authorization": f"DeepL-Auth-Key {KEY}"},
                       data={"text": text, "target_lang": "ES", "source_lang": "EN", "tag_handling": "xml",
                             "ignore_tags": ["skip", "code,other"], "outline_detection": "0",
                             "splitting_tags": "par"})
    assert reply.status_code == 200, reply.text
    out = reply.json()["translations"][0]["text"]
    assert out.endswith("<skip>Open the file</skip><code>Open the file</code></doc>")
    assert "Open" not in _text_of(out, "<par>", "</par>")
