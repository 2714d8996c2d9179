"""DeepL's parameter checks (`api.deepl_checks`): DeepL's wording, and `model_type` mapped onto the router."""

from __future__ import annotations

import asyncio

import pytest
from api_fakes import GOOD_KEY, FakeService, client

from peakgate.api.contract import Language
from peakgate.api.deepl_checks import (
    Served,
    check_formality,
    check_languages_differ,
    check_model_type,
    check_source,
    check_target,
    model_type_used,
    translate_with_model_type,
)
from peakgate.domain import Principal, TranslateRequest
from peakgate.errors import BadRequest, UnsupportedPair

SERVED = Served.of([Language("en", "English", ("es",)), Language("es", "Spanish", ("en",))],
                   ["EN-GB", "EN-US", "ES"])
AUTH = {"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"}
ANYONE = Principal(key=None, tenant="t", priority="interactive")


@pytest.mark.parametrize(("given", "served_as"), [("ES", "es"), ("EN-US", "en-us"), ("en-gb", "en-gb"), ("EN", "en")])
def test_served_targets_pass_in_the_service_spelling(given: str, served_as: str) -> None:
    assert check_target(given, SERVED) == served_as


@pytest.mark.parametrize("given", ["XX", "DE", "ES-MX", "PT-BR", ""])
def test_unknown_targets_answer_deepls_words(given: str) -> None:
    with pytest.raises(BadRequest, match=r"^Value for 'target_lang' not supported\.$"):
        check_target(given, SERVED)


def test_sources_are_base_codes_or_detection() -> None:
    assert [check_source(s, SERVED) for s in ("EN", "es", None, "auto", "")] == ["en", "es", None, None, None]
    with pytest.raises(BadRequest, match=r"^Value for 'source_lang' not supported\.$"):
        check_source("JA", SERVED)


@pytest.mark.parametrize("value", [None, "default", "prefer_more", "PREFER_LESS"])
def test_formality_that_falls_back_passes(value: str | None) -> None:
    check_formality(value)


@pytest.mark.parametrize(("value", "message"), [
    ("more", "'formality' is not supported for given 'target_lang'."),
    ("less", "'formality' is not supported for given 'target_lang'."),
    ("formal-ish", "Value for 'formality' not supported."),
])
def test_formality_refusals(value: str, message: str) -> None:
    with pytest.raises(BadRequest) as caught:
        check_formality(value)
    assert caught.value.message == message


def test_model_types_map_to_router_hints() -> None:
    assert [check_model_type(m) for m in (None, "quality_optimized", "prefer_quality_optimized",
                                          "latency_optimized")] == [None, "quality", "quality", "fast"]
    with pytest.raises(BadRequest, match=r"^Value for 'model_type' not supported\.$"):
        check_model_type("fastest")
    assert (model_type_used("tiny"), model_type_used("medium"), model_type_used("large")) == (
        "latency_optimized", "quality_optimized", "quality_optimized")


def test_same_language_documents_are_refused_by_base_code() -> None:
    check_languages_differ(None, "en-us")
    check_languages_differ("es", "en-us")
    with pytest.raises(BadRequest, match=r"^Source and target language are equal\.$"):
        check_languages_differ("en", "en-gb")


class QualityTierLacksPair(FakeService):
    async def translate(self, request: TranslateRequest, principal: Principal):  # type: ignore[no-untyped-def]
        if request.tier == "quality":
            self.requests.append(request)
            raise UnsupportedPair("no model in tier 'large' serves en->es")
        return await super().translate(request, principal)


def test_prefer_quality_falls_back_to_the_default_tier_but_quality_does_not() -> None:
    service = QualityTierLacksPair()
    request = TranslateRequest(("hello",), "en", "es")
    result = asyncio.run(translate_with_model_type(service, request, ANYONE, "prefer_quality_optimized"))
    assert [r.tier for r in service.requests] == ["quality", None]
    assert result.translations[0].text == "HELLO"
    with pytest.raises(UnsupportedPair):
        asyncio.run(translate_with_model_type(service, request, ANYONE, "quality_optimized"))


@pytest.mark.parametrize(("field", "value", "message"), [
    ("model_type", "turbo", "Value for 'model_type' not supported."),
    ("formality", "more", "'formality' is not supported for given 'target_lang'."),
    ("source_lang", "ZZ", "Value for 'source_lang' not supported."),
])
def test_translate_answers_the_check_as_400(field: str, value: str, message: str) -> None:
    service = FakeService()
    reply = client(service).post("/v2/translate", json={"text": "hi", "target_lang": "ES", field: value},
                                 headers=AUTH)
    assert (reply.status_code, reply.json()) == (400, {"message": message})
    assert service.requests == []  # refused before anything was translated


def test_model_type_used_only_when_model_type_was_sent() -> None:
    service = FakeService()
    http = client(service)
    plain = http.post("/v2/translate", json={"text": "hi", "target_lang": "ES"}, headers=AUTH).json()
    fast = http.post("/v2/translate", json={"text": "hi", "target_lang": "ES", "model_type": "latency_optimized"},
                     headers=AUTH).json()
    assert "model_type_used" not in plain["translations"][0]
    assert [r.tier for r in service.requests] == [None, "fast"]
    # The fake answers with the hint as its tier; only the router's "tiny" tier reads as latency_optimized.
    assert fast["translations"][0]["model_type_used"] == "quality_optimized"
