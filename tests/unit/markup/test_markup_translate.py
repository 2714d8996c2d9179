"""translate_markup: one service request for every sentence of every text, within the request limits."""

from __future__ import annotations

import pytest

from peakgate.config import LimitsConfig
from peakgate.domain import Principal, TranslateRequest, TranslateResult, Translation
from peakgate.errors import BadRequest
from peakgate.markup import format_options, markup_options, translate_markup
from peakgate.markup.options import tag_list

PRINCIPAL = Principal("k", "acme", "interactive")


class FakeService:
    """Upper-cases; records every request it gets; the first segment's model name says which call served it."""

    def __init__(self) -> None:
        self.requests: list[TranslateRequest] = []

    async def translate(self, request: TranslateRequest, principal: Principal) -> TranslateResult:
        self.requests.append(request)
        source = request.source or "en"
        origin = "cache" if len(self.requests) > 1 else "engine"
        out = tuple(Translation(s.upper(), source, f"m{len(self.requests)}", "fast", origin) for s in request.segments)
        return TranslateResult(out, sum(len(s) for s in request.segments), "L1" if len(self.requests) == 1 else None)


def _request(*texts: str, source: str | None = None) -> TranslateRequest:
    return TranslateRequest(segments=texts, source=source, target="es")


async def test_every_sentence_of_every_text_goes_in_one_request() -> None:
    service = FakeService()
    result = await translate_markup(service.translate, LimitsConfig(), _request(
        "<p>Hello <b>big</b> world.</p><p>Again.</p>", "<i>Again.</i>"), PRINCIPAL, markup_options("html"))
    assert [r.segments for r in service.requests] == [("Hello big world.", "Again.", "big")]
    assert [t.text for t in result.translations] == ["<p>HELLO <b>BIG</b> WORLD.</p><p>AGAIN.</p>",
                                                     "<i>AGAIN.</i>"]
    assert result.billed_characters == len("Hello big world.Again.big")
    assert result.degraded == "L1"
    assert {(t.model, t.tier, t.detected_source) for t in result.translations} == {("m1", "fast", "en")}


async def test_plain_text_without_options_goes_straight_through() -> None:
    service = FakeService()
    result = await translate_markup(service.translate, LimitsConfig(), _request("<b>x</b>"), PRINCIPAL, None)
    assert service.requests[0].segments == ("<b>x</b>",)
    assert result.translations[0].text == "<B>X</B>"


async def test_markup_without_text_is_answered_without_the_service() -> None:
    service = FakeService()
    result = await translate_markup(service.translate, LimitsConfig(), _request("<br/><p> 42 </p>", source="en"),
                                    PRINCIPAL, markup_options("html"))
    assert service.requests == []
    assert result.translations[0] == Translation("<br/><p> 42 </p>", "en", "none", "none", "unchanged")


async def test_more_sentences_than_a_request_takes_go_in_several_with_one_source() -> None:
    service = FakeService()
    text = "".join(f"<p>Line number {n}.</p>" for n in range(5))
    result = await translate_markup(service.translate, LimitsConfig(max_segments=2), _request(text), PRINCIPAL,
                                    markup_options("html"))
    assert [len(r.segments) for r in service.requests] == [2, 2, 1]
    assert [r.source for r in service.requests] == [None, "en", "en"]  # detected once, pinned for the rest
    assert result.translations[0].text == text.upper().replace("<P>", "<p>").replace("</P>", "</p>")
    assert result.translations[0].origin == "engine"  # mixed origins: engine


async def test_malformed_xml_is_refused_before_anything_is_translated() -> None:
    service = FakeService()
    with pytest.raises(BadRequest, match="mismatched tag"):
        await translate_markup(service.translate, LimitsConfig(), _request("<a><b></a>"), PRINCIPAL,
                               markup_options("xml"))
    assert service.requests == []


def test_options_parse_deepl_lists_and_refuse_unknown_modes() -> None:
    assert tag_list("a, b,,c") == {"a", "b", "c"}
    assert tag_list(["a,B", "c"], lower=True) == {"a", "b", "c"}
    assert markup_options("HTML", ignore_tags="Code").ignore_tags == {"code"}
    assert markup_options("xml", ignore_tags="Code").ignore_tags == {"Code"}
    with pytest.raises(BadRequest, match="Parameter 'tag_handling' is invalid"):
        markup_options("bogus")
    assert format_options("text") is None
    assert format_options("HTML") == markup_options("html")
    with pytest.raises(BadRequest, match="format 'markdown' is not supported"):
        format_options("markdown")


async def test_split_sentences_off_sends_each_block_whole() -> None:
    service = FakeService()
    request = TranslateRequest(segments=("<p>One. <b>Two</b> three.</p>",), source="en", target="es",
                               split_sentences=False)
    result = await translate_markup(service.translate, LimitsConfig(), request, PRINCIPAL, markup_options("html"))
    assert service.requests[0].segments == ("One. Two three.", "Two")
    assert result.translations[0].text == "<p>ONE. <b>TWO</b> THREE.</p>"


async def test_text_already_in_the_target_language_pins_no_source() -> None:
    service = FakeService()

    async def unchanged(request: TranslateRequest, principal: Principal) -> TranslateResult:
        service.requests.append(request)
        return TranslateResult(tuple(Translation(s, "es", "none", "none", "unchanged") for s in request.segments), 0)

    text = "".join(f"<p>Hola número {n}.</p>" for n in range(3))
    result = await translate_markup(unchanged, LimitsConfig(max_segments=2), _request(text), PRINCIPAL,
                                    markup_options("html"))
    assert [r.source for r in service.requests] == [None, None]
    assert result.translations[0].text == text
