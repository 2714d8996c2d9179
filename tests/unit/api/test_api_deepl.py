"""DeepL-compatible API (/v2/*) against a fake service: JSON/form/multipart bodies, codes, DeepL error statuses."""

from __future__ import annotations

import pytest
from api_fakes import GOOD_KEY, FakeService, client

from peakgate.errors import DeadlineExceeded, EngineCrashed, InputTooLarge, Overloaded, QuotaExceeded, RateLimited

AUTH = {"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"}


def test_translate_json_body_like_the_sdk() -> None:
    service = FakeService()
    body = {"text": ["hello", "hi"], "target_lang": "ES", "source_lang": "EN", "show_billed_characters": True,
            "formality": "prefer_less", "split_sentences": "nonewlines", "tag_handling": "xml", "context": "c",
            "glossary_id": "g", "model_type": "quality_optimized"}
    reply = client(service).post("/v2/translate", json=body, headers=AUTH)
    assert reply.status_code == 200
    assert reply.json() == {"translations": [
        {"detected_source_language": "EN", "text": "HELLO", "billed_characters": 5,
         "model_type_used": "quality_optimized"},
        {"detected_source_language": "EN", "text": "HI", "billed_characters": 2,
         "model_type_used": "quality_optimized"},
    ]}
    sent = service.requests[0]
    # prefer_less falls back to the default formality (no engine has one); quality_optimized hints the router
    assert (sent.source, sent.target, sent.formality, sent.split_sentences, sent.tier) == (
        "en", "es", None, True, "quality")


def test_translate_form_with_repeated_text_and_regional_target() -> None:
    service = FakeService()
    reply = client(service).post("/v2/translate", data={"text": ["hola", "el gato"], "target_lang": "EN-US",
                                                        "split_sentences": "0"}, headers=AUTH)
    assert [t["text"] for t in reply.json()["translations"]] == ["HOLA", "EL GATO"]
    assert reply.json()["translations"][0]["detected_source_language"] == "ES"
    assert (service.requests[0].source, service.requests[0].target) == (None, "en-us")  # the region picks a model
    assert service.requests[0].split_sentences is False


def test_translate_multipart_and_auth_key_field() -> None:
    files = {"text": (None, "hello"), "target_lang": (None, "PT-BR"), "auth_key": (None, GOOD_KEY)}
    service = FakeService()
    service.translate_pairs = None  # type: ignore[attr-defined]
    reply = client(service).post("/v2/translate", files=files)
    assert reply.status_code == 400  # the fake serves no Portuguese: the body was read, the target refused
    assert reply.json()["message"] == "Value for 'target_lang' not supported."


def test_translate_multipart_file_upload_is_refused() -> None:
    files = {"text": ("a.txt", b"hello"), "target_lang": (None, "ES")}
    reply = client(FakeService()).post("/v2/translate", files=files, headers=AUTH)
    assert reply.status_code == 400
    assert "file uploads" in reply.json()["message"]


@pytest.mark.parametrize(("data", "fragment"), [
    ({"text": "a"}, "missing required field `target_lang`"),
    ({"target_lang": "ES"}, "no text to translate"),
    ({"text": "a", "target_lang": "ES", "split_sentences": "2"}, "split_sentences"),
    ({"text": ["a"] * 51, "target_lang": "ES"}, "too many segments"),
    ({"text": "a", "target_lang": "XX"}, "Value for 'target_lang' not supported."),
])
def test_translate_bad_requests_are_400_with_message(data: dict[str, object], fragment: str) -> None:
    reply = client(FakeService()).post("/v2/translate", data=data, headers=AUTH)
    assert reply.status_code == 400
    assert fragment in reply.json()["message"]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "DeepL-Auth-Key wrong"}])
def test_bad_key_is_403(headers: dict[str, str]) -> None:
    http = client(FakeService())
    for reply in (http.post("/v2/translate", data={"text": "a", "target_lang": "ES"}, headers=headers),
                  http.get("/v2/usage", headers=headers), http.get("/v2/languages", headers=headers)):
        assert reply.status_code == 403
        assert reply.json() == {"message": "invalid API key"}


@pytest.mark.parametrize(("error", "status", "retry_after"), [
    (RateLimited("slow down", retry_after_s=1.5), 429, "2"),
    (QuotaExceeded("quota spent"), 456, "3600"),
    (Overloaded("busy", retry_after_s=0.01), 503, "1"),
    (DeadlineExceeded("too late", retry_after_s=3.0), 503, "3"),
    (DeadlineExceeded("too late"), 503, "1"),  # raised without a hint (the scheduler's own deadline)
    (EngineCrashed("engine died"), 503, "1"),  # DeepL answers 503 for engine errors: every 503 says when
    (InputTooLarge("too big"), 413, None),
])
def test_error_statuses_follow_deepl(error: Exception, status: int, retry_after: str | None) -> None:
    service = FakeService(fail_with=error)  # type: ignore[arg-type]
    reply = client(service).post("/v2/translate", json={"text": "a", "target_lang": "ES"}, headers=AUTH)
    assert reply.status_code == status
    assert reply.headers.get("Retry-After") == retry_after
    assert set(reply.json()) == {"message"}


@pytest.mark.parametrize("method", ["GET", "POST"])
def test_usage(method: str) -> None:
    reply = client(FakeService(character_count=42)).request(method, "/v2/usage", headers=AUTH)
    assert reply.json() == {"character_count": 42, "character_limit": 500_000}


def test_usage_unlimited_reports_a_limit_the_sdks_do_not_read_as_reached() -> None:
    reply = client(FakeService(character_limit=0)).post("/v2/usage", data={"auth_key": GOOD_KEY})
    assert reply.json()["character_limit"] > 10**9


def test_languages_source_and_target_from_query_or_get_body() -> None:
    http = client(FakeService())
    source = http.get("/v2/languages", headers=AUTH).json()
    assert source == [{"language": "EN", "name": "English", "supports_formality": False},
                      {"language": "ES", "name": "Spanish", "supports_formality": False}]
    by_query = http.get("/v2/languages", params={"type": "target"}, headers=AUTH).json()
    # The official SDK sends `type=target` as a form body on a GET.
    by_body = http.request("GET", "/v2/languages", content=b"type=target", headers=AUTH | {
        "Content-Type": "application/x-www-form-urlencoded"}).json()
    assert by_query == by_body
    assert [lang["language"] for lang in by_query] == ["EN-GB", "EN-US", "ES"]


def test_languages_unknown_type() -> None:
    reply = client(FakeService()).get("/v2/languages", params={"type": "both"}, headers=AUTH)
    assert reply.status_code == 400
    assert "type" in reply.json()["message"]


def test_unknown_v2_path_answers_in_deepl_shape() -> None:
    reply = client(FakeService()).get("/v2/no-such-thing", headers=AUTH)
    assert (reply.status_code, reply.json()) == (404, {"message": "Not Found"})
