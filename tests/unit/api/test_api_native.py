"""Native API (/v1/*, health, readiness, metrics) against a fake service: parsing, auth, error mapping."""

from __future__ import annotations

import pytest
from api_fakes import GOOD_KEY, FakeService, client
from prometheus_client import CONTENT_TYPE_LATEST

from peakgate.errors import (
    BackendError,
    DeadlineExceeded,
    EngineCrashed,
    InputTooLarge,
    NotFound,
    Overloaded,
    PeakgateError,
    QuotaExceeded,
    RateLimited,
    Unavailable,
)

AUTH = {"Authorization": f"Bearer {GOOD_KEY}"}


def test_translate_segments_returns_each_translation_and_billing() -> None:
    service = FakeService()
    reply = client(service).post("/v1/translate", json={"segments": ["hello", "world"], "target": "es"}, headers=AUTH)
    assert reply.status_code == 200
    assert reply.json() == {
        "translations": [
            {"text": "HELLO", "detected_source": "en", "model": "fake-en-es", "tier": "medium"},
            {"text": "WORLD", "detected_source": "en", "model": "fake-en-es", "tier": "medium"},
        ],
        "billed_characters": 10,
    }
    assert service.requests[0].source is None  # detect


def test_translate_passes_every_option_through() -> None:
    service = FakeService()
    body = {"text": "hello", "source": "EN", "target": "ES", "tier": "quality", "model": "m", "priority": "batch",
            "deadline_ms": 250, "split_sentences": False, "unknown_field": 1}
    reply = client(service).post("/v1/translate", json=body, headers={"X-API-Key": GOOD_KEY})
    assert reply.status_code == 200
    sent = service.requests[0]
    assert (sent.segments, sent.source, sent.target, sent.tier, sent.model) == (("hello",), "en", "es", "quality", "m")
    assert (sent.priority, sent.deadline_ms, sent.split_sentences) == ("batch", 250.0, False)
    assert reply.json()["translations"][0]["tier"] == "quality"


@pytest.mark.parametrize("source", ["auto", None, ""])
def test_translate_auto_source_means_detect(source: str | None) -> None:
    service = FakeService()
    reply = client(service).post("/v1/translate", json={"text": "hola", "source": source, "target": "en"},
                                 headers=AUTH)
    assert reply.json()["translations"][0]["detected_source"] == "es"
    assert service.requests[0].source is None


@pytest.mark.parametrize(("body", "fragment"), [
    ({"segments": ["a"]}, "missing required field `target`"),
    ({"segments": ["a"], "target": 5}, "Expected `str`, got `int` - at `$.target`"),
    ({"segments": "a", "target": "es"}, "Expected `array | null`, got `str` - at `$.segments`"),
    ({"segments": [1], "target": "es"}, "Expected `str`, got `int`"),
    ({"target": "es"}, "send `segments`"),
    ({"segments": ["a"], "target": "es", "priority": "urgent"}, "priority"),
    ({"segments": ["a"], "target": "es", "deadline_ms": -1}, "deadline_ms"),
    ({"segments": [], "target": "es"}, "no text to translate"),
    ({"segments": ["a"] * 51, "target": "es"}, "too many segments"),
    ({"segments": ["a"], "target": "xx"}, "no model translates"),
])
def test_translate_bad_requests_say_what_is_wrong(body: dict[str, object], fragment: str) -> None:
    reply = client(FakeService()).post("/v1/translate", json=body, headers=AUTH)
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert fragment in error["message"]
    assert error["code"] in {"bad_request", "unsupported_language_pair"}


def test_translate_malformed_json() -> None:
    reply = client(FakeService()).post("/v1/translate", content=b'{"target": ', headers=AUTH | {
        "Content-Type": "application/json"})
    assert reply.status_code == 400
    assert "not valid JSON" in reply.json()["error"]["message"]


@pytest.mark.parametrize("headers", [{}, {"Authorization": "Bearer nope"}, {"X-API-Key": "nope"}])
def test_translate_bad_key_is_401(headers: dict[str, str]) -> None:
    reply = client(FakeService()).post("/v1/translate", json={"text": "a", "target": "es"}, headers=headers)
    assert reply.status_code == 401
    assert reply.json() == {"error": {"code": "unauthorized", "message": "invalid API key"}}


@pytest.mark.parametrize(("error", "status", "retry_after"), [
    (RateLimited("slow down", retry_after_s=0.2), 429, "1"),
    (RateLimited("slow down", retry_after_s=2.1), 429, "3"),
    (Overloaded("busy", retry_after_s=5.0), 503, "5"),
    (DeadlineExceeded("too late"), 504, "1"),  # every Rejected carries a hint, wherever it was raised
    (QuotaExceeded("quota spent"), 402, "3600"),
    (InputTooLarge("too big"), 413, None),
    (NotFound("no such thing"), 404, None),
    (EngineCrashed("engine died"), 502, None),
    (BackendError("engine failed"), 502, None),
    (Unavailable("no engine up"), 503, "1"),
    (PeakgateError("unexpected"), 500, None),
])
def test_translate_error_statuses(error: PeakgateError, status: int, retry_after: str | None) -> None:
    reply = client(FakeService(fail_with=error)).post("/v1/translate", json={"text": "a", "target": "es"},
                                                     headers=AUTH)
    assert reply.status_code == status
    assert reply.headers.get("Retry-After") == retry_after
    assert reply.json() == {"error": {"code": error.code, "message": error.message}}


def test_unexpected_exception_is_a_json_500() -> None:
    service = FakeService()
    service.fail_with = None
    service.languages = lambda: 1 / 0  # type: ignore[method-assign,assignment,return-value]
    reply = client(service).get("/v1/languages")
    assert reply.status_code == 500
    assert reply.json() == {"error": {"code": "internal_error", "message": "internal server error"}}


def test_languages() -> None:
    reply = client(FakeService()).get("/v1/languages")
    assert reply.json() == [{"code": "en", "name": "English", "targets": ["es"]},
                            {"code": "es", "name": "Spanish", "targets": ["en"]}]


def test_health_and_readiness() -> None:
    service = FakeService(is_ready=False)
    http = client(service)
    assert (http.get("/healthz").status_code, http.get("/healthz").json()) == (200, {"status": "ok"})
    assert http.get("/readyz").status_code == 503
    service.is_ready = True
    assert (http.get("/readyz").status_code, http.get("/readyz").json()) == (200, {"status": "ready"})


def test_metrics_count_requests_by_route_tier_and_status() -> None:
    http = client(FakeService())
    http.post("/v1/translate", json={"text": "a", "target": "es", "tier": "tiny"}, headers=AUTH)
    http.post("/v1/translate", json={"text": "a", "target": "es"})
    reply = http.get("/metrics")
    assert reply.headers["content-type"] == CONTENT_TYPE_LATEST
    text = reply.text
    assert 'peakgate_requests_total{endpoint="/v1/translate",status="200",tier="tiny"} 1.0' in text
    assert 'peakgate_requests_total{endpoint="/v1/translate",status="401",tier="none"} 1.0' in text
    assert 'peakgate_request_latency_seconds_count{endpoint="/v1/translate",tier="tiny"} 1.0' in text


def test_unknown_path_and_wrong_method_answer_json() -> None:
    http = client(FakeService())
    assert http.get("/v1/nothing").json() == {"error": {"code": "not_found", "message": "Not Found"}}
    reply = http.put("/v1/translate")
    assert reply.status_code == 405
    assert reply.json()["error"]["code"] == "method_not_allowed"
    assert "POST" in reply.headers["allow"]


def test_translate_json_sent_with_a_form_content_type() -> None:
    # `curl -d '{…}'` labels its body application/x-www-form-urlencoded.
    reply = client(FakeService()).post(
        "/v1/translate",
        content=b'{"segments": ["a"], "target": "es"}',
        headers={**AUTH, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert reply.status_code == 200
    assert reply.json()["translations"][0]["text"] == "A"


def test_corrections_go_to_the_callers_memory() -> None:
    service = FakeService()
    reply = client(service).post("/v1/memory", json={"source_lang": "en", "target_lang": "es", "source": "Save",
                                                     "target": "Guardar"}, headers=AUTH)
    assert reply.status_code == 201
    assert reply.json() == {"inserted": 1, "updated": 0, "kept": 0}
    assert service.corrections == [("test", "en", "es", "Save", "Guardar")]
    missing = client(service).post("/v1/memory", json={"source": "Save"}, headers=AUTH)
    assert missing.status_code == 400


@pytest.mark.parametrize(("path", "body", "headers"), [
    ("/v1/translate", {"segments": ["a"], "target": "es"}, AUTH),
    ("/v2/translate", {"text": ["a"], "target_lang": "ES"}, {"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"}),
    ("/translate", {"q": "a", "source": "en", "target": "es", "api_key": GOOD_KEY}, {}),
])
def test_degraded_results_say_so_in_every_dialect(path: str, body: dict[str, object],
                                                  headers: dict[str, str]) -> None:
    reply = client(FakeService(degraded="L2")).post(path, json=body, headers=headers)
    assert reply.status_code == 200
    assert reply.headers["X-Peakgate-Degraded"] == "L2"
    normal = client(FakeService()).post(path, json=body, headers=headers)
    assert "X-Peakgate-Degraded" not in normal.headers


def test_openapi_lists_every_http_operation() -> None:
    paths = client(FakeService()).get("/openapi.json").json()["paths"]
    expected = {"/v1/translate", "/v1/translate/stream", "/v1/memory", "/v1/jobs", "/v2/translate", "/v2/document",
                "/v2/glossaries", "/translate", "/detect", "/languages", "/metrics", "/readyz"}
    assert expected <= set(paths)
