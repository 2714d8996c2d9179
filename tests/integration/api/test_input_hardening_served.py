"""Hostile input against the real served process (echo engines, so it stays fast): deep JSON nesting, invalid
UTF-8 in forms and query strings, jobs and documents validated and charged at submission (issue 19)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench._http import Server, serve

KEY, QUOTA_KEY = "hardening-key", "hardening-quota-key"
NATIVE = {"Authorization": f"Bearer {KEY}"}
DEEPL = {"Authorization": f"DeepL-Auth-Key {KEY}"}
DEPTH = 990  # what the fuzzer sent


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    config: dict[str, object] = {
        "data_dir": str(tmp_path_factory.mktemp("data")), "log_level": "warning",
        "models": [{"name": "echo-en-es", "engine": "echo", "source": "en", "target": "es"},
                   {"name": "echo-es-en", "engine": "echo", "source": "es", "target": "en"}],
        "tiers": {"medium": ["echo-en-es", "echo-es-en"]}, "default_tier": "medium",
        "keys": [{"key": KEY, "tenant": "acme"},
                 {"key": QUOTA_KEY, "tenant": "small", "quota_chars": 100}],
    }
    with serve(config) as running:
        yield running


def _nested(field: str, depth: int = DEPTH) -> bytes:
    return b'{"%s": ' % field.encode() + b"[" * depth + b"]" * depth + b"}"


@pytest.mark.parametrize(("path", "headers", "message"), [
    ("/v1/translate", NATIVE, lambda j: j["error"]["message"]),
    ("/v1/translate/stream", NATIVE, lambda j: j["error"]["message"]),
    ("/v1/jobs", NATIVE, lambda j: j["error"]["message"]),
    ("/v2/translate", DEEPL, lambda j: j["message"]),
    ("/v2/glossaries", DEEPL, lambda j: j["message"]),
    ("/translate", {}, lambda j: j["error"]),
])
def test_deep_json_nesting_is_a_400(server: Server, path: str, headers: dict[str, str],
                                    message: Callable[[Any], str]) -> None:
    for field in ("unknown", "segments", "text", "q"):
        reply = httpx.post(server.url + path, content=_nested(field), timeout=10,
                           headers={**headers, "Content-Type": "application/json"})
        assert reply.status_code == 400, (field, reply.text)
        # A typed field refuses the first `[` it cannot hold; an ignored one is skipped level by level.
        assert "nested too deeply" in message(reply.json()) or field in message(reply.json())


@pytest.mark.parametrize(("send", "field"), [
    ({"content": b"target_lang=ES&text=caf%E9"}, "text"),
    ({"content": b"target_lang=ES&text=caf\xe9"}, "text"),
    ({"url": "?target_lang=ES&text=caf%E9"}, "text"),
    ({"files": {"text": (None, b"caf\xe9")}, "data": {"target_lang": "ES"}}, "text"),
])
def test_invalid_utf8_in_forms_and_queries_is_a_400_naming_the_field(server: Server, send: dict[str, object],
                                                                     field: str) -> None:
    headers = dict(DEEPL)
    if "content" in send:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    url = f"{server.url}/v2/translate{send.get('url', '')}"
    body = {k: v for k, v in send.items() if k != "url"}
    reply = httpx.post(url, headers=headers, **body)  # type: ignore[arg-type]
    assert reply.status_code == 400, reply.text
    assert "not valid UTF-8" in reply.json()["message"] and f"`{field}`" in reply.json()["message"]


def test_valid_utf8_in_a_raw_form_body_is_not_mojibake(server: Server) -> None:
    reply = httpx.post(f"{server.url}/v2/translate", content="target_lang=ES&text=café".encode(),
                       headers={**DEEPL, "Content-Type": "application/x-www-form-urlencoded"})
    assert reply.status_code == 200, reply.text
    assert reply.json()["translations"][0]["text"] == "café"  # the echo engine hands it back as sent


@pytest.mark.parametrize(("body", "status", "fragment"), [
    ({"segments": ["a\0b"], "source": "en", "target": "es"}, 400, "NUL"),
    ({"segments": ["x" * 100_000], "source": "en", "target": "es"}, 413, "100000 characters"),
    ({"segments": ["hello"], "source": "en", "target": "xx"}, 400, "en->xx"),
    ({"segments": ["hello"], "target": "xx"}, 400, "xx"),
    ({"segments": ["hello"], "source": "en", "target": ""}, 400, "target"),
], ids=["nul", "long-segment", "unsupported-pair", "unknown-target", "empty-target"])
def test_bad_jobs_are_refused_at_submission(server: Server, body: dict[str, object], status: int,
                                            fragment: str) -> None:
    reply = httpx.post(f"{server.url}/v1/jobs", json=body, headers=NATIVE)
    assert reply.status_code == status, reply.text
    assert fragment in reply.json()["error"]["message"]


@pytest.mark.parametrize(("data", "fields", "status", "fragment"), [
    (b"a\0b", {"target_lang": "ES"}, 400, "NUL"),
    (b"x" * 100_000, {"target_lang": "ES"}, 413, "100000 characters"),
    (b"hello", {"target_lang": "XX"}, 400, "Value for 'target_lang' not supported."),  # DeepL's words
    (b"hello", {"target_lang": "ES", "source_lang": "DE"}, 400, "Value for 'source_lang' not supported."),
], ids=["nul", "long-segment", "unknown-target", "unknown-source"])
def test_bad_documents_are_refused_at_submission(server: Server, data: bytes, fields: dict[str, str],
                                                 status: int, fragment: str) -> None:
    reply = httpx.post(f"{server.url}/v2/document", files={"file": ("a.txt", data)}, data=fields, headers=DEEPL)
    assert reply.status_code == status, reply.text
    assert fragment in reply.json()["message"]


def test_jobs_and_documents_are_charged_to_the_quota(server: Server, tmp_path: Path) -> None:
    native, deepl = {"Authorization": f"Bearer {QUOTA_KEY}"}, {"Authorization": f"DeepL-Auth-Key {QUOTA_KEY}"}
    big = httpx.post(f"{server.url}/v1/jobs", json={"segments": ["x" * 349] * 10, "target": "es"}, headers=native)
    assert big.status_code == 402 and "3490" in big.json()["error"]["message"]
    document = httpx.post(f"{server.url}/v2/document", files={"file": ("a.txt", b"y" * 101)},
                          data={"target_lang": "ES"}, headers=deepl)
    assert document.status_code == 456 and "101" in document.json()["message"]
    usage = httpx.get(f"{server.url}/v2/usage", headers=deepl).json()
    assert usage == {"character_count": 0, "character_limit": 100}
    assert httpx.post(f"{server.url}/v1/jobs", json={"segments": ["hello"], "target": "es"},
                      headers=native).status_code == 202
    assert httpx.post(f"{server.url}/v2/document", files={"file": ("a.txt", b"one\ntwo\n")},
                      data={"target_lang": "ES"}, headers=deepl).status_code == 200
    assert httpx.get(f"{server.url}/v2/usage", headers=deepl).json()["character_count"] == 5 + 6
