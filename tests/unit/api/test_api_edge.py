"""GET /v1/translate (api/edge.py): the cache policy table, ETag matching, and the route against a fake service."""

from __future__ import annotations

from typing import Any

import pytest
from api_fakes import GOOD_KEY, FakeService, client

from peakgate.api.edge import KEY_HEADERS, NO_STORE, cache_control, entity_tag, none_match
from peakgate.api.edge_settings import EdgeCacheConfig, EdgeCachePolicy
from peakgate.config import Settings
from peakgate.domain import TranslateResult, Translation

AUTH = {"X-API-Key": GOOD_KEY}
QUERY = {"text": ["Save", "Open"], "target": "es", "source": "en"}
SHARED = EdgeCacheConfig(private_keys="shared", shared_max_age_s=86_400)


@pytest.mark.parametrize(("config", "keyed", "holds_pii", "degraded", "expected"), [
    (EdgeCacheConfig(), False, False, False, "public, max-age=3600, stale-while-revalidate=60"),
    (EdgeCacheConfig(enabled=False), False, False, False, NO_STORE),
    (EdgeCacheConfig(), False, True, False, NO_STORE),
    (EdgeCacheConfig(allow_pii=True, stale_while_revalidate_s=0), False, True, False, "public, max-age=3600"),
    (EdgeCacheConfig(shared_max_age_s=60), False, False, False,
     "public, max-age=3600, s-maxage=60, stale-while-revalidate=60"),
    (EdgeCacheConfig(), True, False, False, NO_STORE),  # a private key, not allowed: never cacheable
    (EdgeCacheConfig(private_keys="browser", shared_max_age_s=60, max_age_s=10), True, False, False,
     "private, max-age=10, stale-while-revalidate=60"),  # no s-maxage: shared caches may not keep it
    (SHARED, True, False, False, "public, max-age=3600, s-maxage=86400, stale-while-revalidate=60"),
    (SHARED, True, True, False, NO_STORE),  # PII wins over the key allowance
    (SHARED, True, False, True, "public, no-cache"),  # degraded: kept, but revalidated on every use
    (EdgeCacheConfig(private_keys="browser"), True, False, True, "private, no-cache"),
])
def test_cache_control_policy(config: EdgeCacheConfig, keyed: bool, holds_pii: bool, degraded: bool,
                              expected: str) -> None:
    assert cache_control(config, keyed=keyed, holds_pii=holds_pii, degraded=degraded) == expected


@pytest.mark.parametrize(("header", "matches"), [
    ('W/"abc"', True),
    ('"abc"', True),  # weak comparison: the W/ prefix does not matter, either side
    ('"abd"', False),
    ('"x", W/"abc"', True),
    ('"x",W/"y" , "abc"', True),
    ('"a,bc", "ab"', False),  # a comma may sit inside a tag
    ("*", True),
    (" * ", True),
    ("abc", False),  # unquoted: not an entity tag
    ("", False),
])
def test_if_none_match_uses_weak_comparison(header: str, matches: bool) -> None:
    assert none_match(header, 'W/"abc"') is matches


def _result(text: str = "Guardar", *, origin: str = "engine", model: str = "m1", degraded: str | None = None
            ) -> TranslateResult:
    tm_score = 1.0 if origin == "tm_exact" else None
    return TranslateResult((Translation(text, "en", model, "medium", origin, tm_score),), 4, degraded)


def test_entity_tag_covers_what_was_translated_not_how_it_was_served() -> None:
    tag = entity_tag(_result())
    assert tag.startswith('W/"') and tag.endswith('"') and len(tag) == 36
    assert entity_tag(_result(origin="cache")) == tag
    assert entity_tag(_result(origin="tm_exact")) == tag
    assert entity_tag(_result("Abrir")) != tag
    assert entity_tag(_result(model="m2")) != tag  # a new model version revalidates as a new answer
    assert entity_tag(_result(degraded="L3")) != tag


def test_policy_overrides_by_tenant_from_config() -> None:
    settings = Settings.model_validate({"edge_cache": {
        "max_query_bytes": 100, "default": {"max_age_s": 5}, "tenants": {"acme": {"private_keys": "shared"}}}})
    policy = settings.edge_cache
    assert policy.config_for("other").max_age_s == 5
    assert policy.config_for("acme") == EdgeCacheConfig(private_keys="shared")  # an override replaces it whole
    with pytest.raises(ValueError, match="private_keys"):
        EdgeCachePolicy.model_validate({"default": {"private_keys": "sometimes"}})


def _served(policy: dict[str, Any] | None = None, *, open_mode: bool = False) -> FakeService:
    settings = Settings.model_validate({"edge_cache": policy or {}})
    return FakeService(settings=settings, open_mode=open_mode)


def test_get_answers_the_posts_body_with_cache_headers_in_open_mode() -> None:
    http = client(_served(open_mode=True))
    got = http.get("/v1/translate", params=QUERY)
    posted = http.post("/v1/translate", json={"segments": ["Save", "Open"], "target": "es", "source": "en"})
    assert got.status_code == 200
    assert got.content == posted.content
    assert got.headers["cache-control"] == "public, max-age=3600, stale-while-revalidate=60"
    assert "vary" not in got.headers  # open mode: every caller is anonymous, no header changes the answer
    assert "cache-control" not in posted.headers and "etag" not in posted.headers


def test_if_none_match_answers_304_without_a_body() -> None:
    http = client(_served({"tenants": {"test": {"private_keys": "shared"}}}))
    first = http.get("/v1/translate", params=QUERY, headers=AUTH)
    etag = first.headers["etag"]
    again = http.get("/v1/translate", params=QUERY, headers=AUTH | {"If-None-Match": f'"other", {etag}'})
    assert again.status_code == 304
    assert again.content == b""
    assert (again.headers["etag"], again.headers["vary"]) == (etag, KEY_HEADERS)
    assert again.headers["cache-control"] == first.headers["cache-control"]
    changed = http.get("/v1/translate", params=QUERY | {"text": "Close"}, headers=AUTH | {"If-None-Match": etag})
    assert changed.status_code == 200
    assert changed.headers["etag"] != etag


def test_private_key_without_allowance_is_no_store_without_validator() -> None:
    http = client(_served())
    reply = http.get("/v1/translate", params=QUERY, headers=AUTH | {"If-None-Match": "*"})
    assert reply.status_code == 200  # nothing is stored, so nothing is revalidated
    assert reply.headers["cache-control"] == NO_STORE
    assert reply.headers["vary"] == KEY_HEADERS
    assert "etag" not in reply.headers


@pytest.mark.parametrize(("text", "allow_pii", "expected"), [
    ("Mail john.doe@example.com", False, NO_STORE),
    ("Call +34 612 345 678", False, NO_STORE),
    ("Page 2 of 10", False, "public, max-age=3600, stale-while-revalidate=60"),  # digits alone are not PII
    ("Mail john.doe@example.com", True, "public, max-age=3600, stale-while-revalidate=60"),
])
def test_pii_in_the_text_is_no_store_unless_allowed(text: str, allow_pii: bool, expected: str) -> None:
    http = client(_served({"default": {"allow_pii": allow_pii}}, open_mode=True))
    reply = http.get("/v1/translate", params={"text": ["Save", text], "target": "es"})
    assert reply.status_code == 200
    assert reply.headers["cache-control"] == expected


def test_degraded_answer_must_be_revalidated() -> None:
    service = _served(open_mode=True)
    service.degraded = "L2"
    reply = client(service).get("/v1/translate", params=QUERY)
    assert reply.headers["cache-control"] == "public, no-cache"
    assert reply.headers["x-peakgate-degraded"] == "L2"
    assert "etag" in reply.headers


def test_get_passes_its_fields_through() -> None:
    service = _served(open_mode=True)
    query = {"text": "hola", "source": "auto", "target": "EN", "tier": "tiny", "glossary_id": "g1"}
    assert client(service).get("/v1/translate", params=query).status_code == 200
    sent = service.requests[0]
    assert (sent.segments, sent.source, sent.target, sent.tier, sent.glossary_id) == (
        ("hola",), None, "en", "tiny", "g1")


@pytest.mark.parametrize(("query", "status", "fragment"), [
    (b"target=es", 400, "missing required field `text`"),
    (b"text=a", 400, "missing required field `target`"),
    (b"text=%FF&target=es", 400, "not valid UTF-8"),
    (b"target=es&text=" + b"a" * 200, 413, "over the 100-byte limit"),
])
def test_bad_queries_say_what_is_wrong(query: bytes, status: int, fragment: str) -> None:
    http = client(_served({"max_query_bytes": 100}, open_mode=True))
    reply = http.get("/v1/translate?" + query.decode("latin-1"))
    assert reply.status_code == status
    assert fragment in reply.json()["error"]["message"]


def test_a_body_on_get_is_refused() -> None:
    http = client(_served(open_mode=True))
    reply = http.request("GET", "/v1/translate", params=QUERY, content=b'{"text": "other"}')
    assert reply.status_code == 400
    assert "query string only" in reply.json()["error"]["message"]


def test_get_needs_a_key_when_keys_are_configured() -> None:
    reply = client(_served()).get("/v1/translate", params=QUERY)
    assert reply.status_code == 401


def test_openapi_lists_the_get_with_a_bodiless_304() -> None:
    document = client(FakeService()).get("/openapi.json").json()
    get = document["paths"]["/v1/translate"]["get"]
    assert {p["name"]: p["required"] for p in get["parameters"] if p["in"] == "query"} == {
        "text": True, "target": True, "source": False, "tier": False, "glossary_id": False}
    assert "content" in get["responses"]["200"] and "content" not in get["responses"]["304"]
    assert "post" in document["paths"]["/v1/translate"]


def test_a_wrong_method_lists_both_translate_methods() -> None:
    reply = client(FakeService()).put("/v1/translate")
    assert reply.status_code == 405
    assert {"GET", "POST"} <= {method.strip() for method in reply.headers["allow"].split(",")}
