"""LibreTranslate-compatible API against a fake service: JSON, form and query fields; Libre error shapes."""

from __future__ import annotations

import pytest
from api_fakes import GOOD_KEY, FakeService, client

from peakgate.errors import DeadlineExceeded, EngineCrashed, InputTooLarge, Overloaded, QuotaExceeded, RateLimited


def test_translate_json_with_source() -> None:
    reply = client(FakeService()).post("/translate", json={"q": "hello", "source": "en", "target": "es",
                                                           "format": "text", "api_key": GOOD_KEY})
    assert reply.json() == {"translatedText": "HELLO"}


def test_translate_auto_detects_and_reports_confidence_percent() -> None:
    reply = client(FakeService()).post("/translate", data={"q": "hola", "source": "auto", "target": "en",
                                                           "api_key": GOOD_KEY, "alternatives": "3"})
    assert reply.json() == {"translatedText": "HOLA", "detectedLanguage": {"confidence": 90.0, "language": "es"}}


def test_translate_list_q_gives_lists() -> None:
    reply = client(FakeService()).post("/translate", json={"q": ["hola", "la casa"], "target": "en",
                                                           "api_key": GOOD_KEY})
    assert reply.json() == {"translatedText": ["HOLA", "LA CASA"], "detectedLanguage": [
        {"confidence": 90.0, "language": "es"}, {"confidence": 90.0, "language": "es"}]}


def test_translate_query_string_only_like_deep_translator() -> None:
    params = {"q": "hello", "source": "en", "target": "es", "format": "text", "api_key": GOOD_KEY}
    reply = client(FakeService()).post("/translate", params=params)
    assert reply.json() == {"translatedText": "HELLO"}


def test_api_key_may_also_come_as_bearer_header() -> None:
    reply = client(FakeService()).post("/translate", json={"q": "hello", "source": "en", "target": "es"},
                                       headers={"Authorization": f"Bearer {GOOD_KEY}"})
    assert reply.status_code == 200


@pytest.mark.parametrize(("body", "fragment"), [
    ({"target": "es"}, "missing required field `q`"),
    ({"q": "a"}, "missing required field `target`"),
    ({"q": 3, "target": "es"}, "Expected `str | array`, got `int`"),
    ({"q": "", "target": "xx"}, "no model translates"),
    ({"q": [], "target": "es"}, "no text to translate"),
])
def test_translate_bad_requests(body: dict[str, object], fragment: str) -> None:
    reply = client(FakeService()).post("/translate", json=body | {"api_key": GOOD_KEY})
    assert reply.status_code == 400
    assert fragment in reply.json()["error"]


def test_bad_key_is_403() -> None:
    http = client(FakeService())
    for path, body in (("/translate", {"q": "a", "target": "es"}), ("/detect", {"q": "a"})):
        reply = http.post(path, json=body | {"api_key": "wrong"})
        assert (reply.status_code, reply.json()) == (403, {"error": "invalid API key"})


@pytest.mark.parametrize(("error", "status", "retry_after"), [
    (RateLimited("slow down", retry_after_s=4.0), 429, "4"),
    (Overloaded("busy", retry_after_s=1.0), 503, "1"),
    (DeadlineExceeded("too late"), 503, "1"),
    (QuotaExceeded("quota spent"), 429, "3600"),  # LibreTranslate's 429 for any limit, quota too
    (EngineCrashed("engine died"), 500, None),
    (InputTooLarge("too long"), 400, None),
])
def test_error_statuses_follow_libretranslate(error: Exception, status: int, retry_after: str | None) -> None:
    service = FakeService(fail_with=error)  # type: ignore[arg-type]
    reply = client(service).post("/translate", json={"q": "a", "target": "es", "api_key": GOOD_KEY})
    assert reply.status_code == status
    assert reply.headers.get("Retry-After") == retry_after
    assert set(reply.json()) == {"error"}


def test_detect() -> None:
    reply = client(FakeService()).post("/detect", data={"q": "hola amigo", "api_key": GOOD_KEY})
    assert reply.json() == [{"confidence": 90.0, "language": "es"}, {"confidence": 10.0, "language": "en"}]


def test_languages_needs_no_key() -> None:
    reply = client(FakeService()).get("/languages")
    assert reply.json() == [{"code": "en", "name": "English", "targets": ["es"]},
                            {"code": "es", "name": "Spanish", "targets": ["en"]}]
