"""GET /v1/translate in the served process (`peakgate serve` on echo engines), called over 127.0.0.1 with httpx
as a browser or a CDN revalidates: ETag + Cache-Control on the first answer, 304 without a body on a repeat
with If-None-Match, a new tag for a new text or target, and `no-store` where the tenant's policy forbids caching
(PII in the text, a private key without allowance)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bench._http import Server, serve

PAIRS = (("en", "es"), ("en", "fr"))
MODELS = [{"name": f"echo-{s}-{t}", "engine": "echo", "source": s, "target": t} for s, t in PAIRS]
CDN_KEY, WEB_KEY, PLAIN_KEY = "edge-cdn-key", "edge-web-key", "edge-plain-key"
CONFIG: dict[str, object] = {
    "models": MODELS, "tiers": {"medium": [str(m["name"]) for m in MODELS]},
    "keys": [{"key": CDN_KEY, "tenant": "cdn"}, {"key": WEB_KEY, "tenant": "web"},
             {"key": PLAIN_KEY, "tenant": "plain"}],
    "edge_cache": {"tenants": {
        "cdn": {"private_keys": "shared", "max_age_s": 600, "shared_max_age_s": 86400},
        "web": {"private_keys": "browser", "max_age_s": 60, "stale_while_revalidate_s": 0},
    }},
}
QUERY = {"text": ["Save the file", "Open"], "source": "en", "target": "es"}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(CONFIG) as running:
        yield running


def get(server: Server, key: str, query: dict[str, object], **headers: str) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/translate", params=query, headers={"Authorization": f"Bearer {key}", **headers})


def test_etag_then_304_on_if_none_match(server: Server) -> None:
    first = get(server, CDN_KEY, QUERY)
    assert first.status_code == 200
    assert first.headers["cache-control"] == "public, max-age=600, s-maxage=86400, stale-while-revalidate=60"
    assert first.headers["vary"] == "Authorization, X-API-Key"
    etag = first.headers["etag"]
    assert [t["text"] for t in first.json()["translations"]] == ["Save the file", "Open"]
    again = get(server, CDN_KEY, QUERY, **{"If-None-Match": etag})
    assert again.status_code == 304
    assert again.content == b""
    assert "content-length" not in again.headers or again.headers["content-length"] == "0"
    assert (again.headers["etag"], again.headers["cache-control"]) == (etag, first.headers["cache-control"])
    # A repeat is served from the result cache (`origin` says so) and still revalidates as the same answer.
    repeat = get(server, CDN_KEY, QUERY)
    assert {t.get("origin") for t in repeat.json()["translations"]} == {"cache"}
    assert repeat.headers["etag"] == etag
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'peakgate_requests_total{endpoint="/v1/translate",status="304",tier="medium"}' in metrics


def test_a_new_text_or_target_has_a_new_etag(server: Server) -> None:
    etag = get(server, CDN_KEY, QUERY).headers["etag"]
    for changed in (QUERY | {"text": "Close the window"}, QUERY | {"target": "fr"}):
        reply = get(server, CDN_KEY, changed, **{"If-None-Match": etag})
        assert reply.status_code == 200
        assert reply.headers["etag"] != etag


def test_pii_in_the_text_is_never_stored(server: Server) -> None:
    reply = get(server, CDN_KEY, QUERY | {"text": "Write to john.doe@example.com"})
    assert reply.status_code == 200
    assert reply.headers["cache-control"] == "no-store"
    assert "etag" not in reply.headers
    assert reply.json()["translations"][0]["text"] == "Write to john.doe@example.com"


def test_private_keys_without_allowance_browser_only_or_no_store(server: Server) -> None:
    web = get(server, WEB_KEY, QUERY)
    assert web.headers["cache-control"] == "private, max-age=60"
    assert get(server, WEB_KEY, QUERY, **{"If-None-Match": web.headers["etag"]}).status_code == 304
    plain = get(server, PLAIN_KEY, QUERY, **{"If-None-Match": "*"})
    assert plain.status_code == 200
    assert plain.headers["cache-control"] == "no-store"
    assert "etag" not in plain.headers
    assert httpx.get(f"{server.url}/v1/translate", params=QUERY).status_code == 401  # no key, no answer


def test_post_is_unchanged(server: Server) -> None:
    reply = httpx.post(f"{server.url}/v1/translate", headers={"Authorization": f"Bearer {CDN_KEY}"},
                       json={"segments": ["Save the file"], "source": "en", "target": "es"})
    assert reply.status_code == 200
    assert reply.json()["translations"][0]["text"] == "Save the file"
    assert not {"cache-control", "etag", "vary"} & set(reply.headers)
