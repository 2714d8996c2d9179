"""DeepL-compatible glossary API (/v2/glossaries*) on a real SQLite store, and the official `deepl` SDK against it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import deepl
import msgspec
import pytest
from api_fakes import AUTH, NOW, FakeGlossaryService
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bench._http import serve_in_thread
from peakgate.api.endpoint import to_route
from peakgate.api.glossaries import glossary_operations
from peakgate.api.openapi import openapi_document
from peakgate.glossary import build_glossary_store

RIVAL = {"Authorization": "DeepL-Auth-Key rival-key"}
TSV_ENTRIES = "server\tservidor central\naccount\tcuenta de usuario"


def _app(tmp_path: Path) -> Starlette:
    service = FakeGlossaryService(build_glossary_store("sqlite", tmp_path / "glossaries.sqlite3", wall=lambda: NOW))
    return Starlette(routes=[to_route(op, service.metrics) for op in glossary_operations(service)])


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(_app(tmp_path), raise_server_exceptions=False) as client:
        yield client


def _create(http: TestClient, **fields: str) -> dict[str, object]:
    body = {"name": "Ops", "source_lang": "EN", "target_lang": "ES", "entries": TSV_ENTRIES,
            "entries_format": "tsv", **fields}
    reply = http.post("/v2/glossaries", json=body, headers=AUTH)
    assert reply.status_code == 201, reply.text
    created: dict[str, object] = reply.json()
    return created


def test_create_json_answers_201_with_deepl_shape(http: TestClient) -> None:
    created = _create(http)
    assert set(created) == {"glossary_id", "name", "ready", "source_lang", "target_lang", "creation_time",
                            "entry_count"}
    assert (created["name"], created["ready"], created["source_lang"], created["target_lang"],
            created["entry_count"], created["creation_time"]) == ("Ops", True, "en", "es", 2,
                                                                    "2026-12-04T03:04:05.678Z")


def test_create_form_with_csv(http: TestClient) -> None:
    reply = http.post("/v2/glossaries", headers=AUTH, data={
        "name": "CSV", "source_lang": "en", "target_lang": "es", "entries_format": "csv",
        "entries": 'server,"servidor, central"\naccount,cuenta,en,es'})
    assert reply.status_code == 201, reply.text
    entries = http.get(f"/v2/glossaries/{reply.json()['glossary_id']}/entries", headers=AUTH)
    assert entries.text == "server\tservidor, central\naccount\tcuenta"


def test_list_get_entries_delete(http: TestClient) -> None:
    created = _create(http)
    gid = created["glossary_id"]
    assert http.get("/v2/glossaries", headers=AUTH).json() == {"glossaries": [created]}
    assert http.get(f"/v2/glossaries/{gid}", headers=AUTH).json() == created
    entries = http.get(f"/v2/glossaries/{gid}/entries", headers={**AUTH, "Accept": "text/tab-separated-values"})
    assert entries.status_code == 200
    assert entries.headers["content-type"].startswith("text/tab-separated-values")
    assert entries.text == TSV_ENTRIES
    deleted = http.delete(f"/v2/glossaries/{gid}", headers=AUTH)
    assert (deleted.status_code, deleted.content) == (204, b"")
    assert http.get(f"/v2/glossaries/{gid}", headers=AUTH).status_code == 404
    assert http.delete(f"/v2/glossaries/{gid}", headers=AUTH).status_code == 404


def test_other_tenants_get_404_and_see_nothing(http: TestClient) -> None:
    gid = _create(http)["glossary_id"]
    assert http.get("/v2/glossaries", headers=RIVAL).json() == {"glossaries": []}
    for path in (f"/v2/glossaries/{gid}", f"/v2/glossaries/{gid}/entries"):
        reply = http.get(path, headers=RIVAL)
        assert reply.status_code == 404
        assert "not found" in reply.json()["message"]
    assert http.delete(f"/v2/glossaries/{gid}", headers=RIVAL).status_code == 404
    assert http.get(f"/v2/glossaries/{gid}", headers=AUTH).status_code == 200


@pytest.mark.parametrize(("fields", "fragment"), [
    ({"entries": "server\ta\nserver\tb"}, "line 2 duplicates source term 'server'"),
    ({"entries": "server\t"}, "line 1 has an empty target term"),
    ({"entries_format": "xlsx"}, "entries_format 'xlsx'"),
    ({"target_lang": "DE"}, "Unsupported glossary language pair: en→de"),
    ({"name": "  "}, "glossary name"),
])
def test_bad_creates_are_400_and_write_nothing(http: TestClient, fields: dict[str, str], fragment: str) -> None:
    body = {"name": "Ops", "source_lang": "EN", "target_lang": "ES", "entries": TSV_ENTRIES, **fields}
    reply = http.post("/v2/glossaries", json=body, headers=AUTH)
    assert reply.status_code == 400
    assert fragment in reply.json()["message"]
    assert http.get("/v2/glossaries", headers=AUTH).json() == {"glossaries": []}


def test_missing_field_is_400(http: TestClient) -> None:
    reply = http.post("/v2/glossaries", json={"name": "x", "source_lang": "EN", "target_lang": "ES"}, headers=AUTH)
    assert reply.status_code == 400
    assert "entries" in reply.json()["message"]


def test_bad_key_is_403_everywhere(http: TestClient) -> None:
    bad = {"Authorization": "DeepL-Auth-Key nope"}
    replies = [http.post("/v2/glossaries", json={"name": "x", "source_lang": "EN", "target_lang": "ES",
                                                 "entries": TSV_ENTRIES}, headers=bad),
               http.get("/v2/glossaries", headers=bad), http.get("/v2/glossaries/x", headers=bad),
               http.delete("/v2/glossaries/x", headers=bad), http.get("/v2/glossaries/x/entries"),
               http.get("/v2/glossary-language-pairs")]
    assert [r.status_code for r in replies] == [403] * 6


def test_auth_key_field_and_language_pairs(http: TestClient) -> None:
    reply = http.get("/v2/glossary-language-pairs", params={"auth_key": "acme-key"})
    assert reply.json() == {"supported_languages": [{"source_lang": "en", "target_lang": "es"},
                                                    {"source_lang": "es", "target_lang": "en"}]}


def test_operations_document_in_openapi(tmp_path: Path) -> None:
    service = FakeGlossaryService(build_glossary_store("memory"))
    doc = msgspec.json.decode(msgspec.json.encode(openapi_document(glossary_operations(service))))
    assert set(doc["paths"]["/v2/glossaries"]) == {"get", "post"}
    assert set(doc["paths"]["/v2/glossaries/{glossary_id}"]) == {"get", "delete"}
    service.glossaries.close()


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    with serve_in_thread(_app(tmp_path)) as url:
        yield url


def test_official_deepl_sdk_round_trip(server_url: str) -> None:
    translator = deepl.Translator("acme-key", server_url=server_url, send_platform_info=False)
    pairs = translator.get_glossary_languages()
    assert [(p.source_lang, p.target_lang) for p in pairs] == [("en", "es"), ("es", "en")]
    entries = {"server": "servidor central", "account": "cuenta de usuario"}
    made = translator.create_glossary("Ops", "EN", "ES", entries)
    assert (made.name, made.source_lang, made.target_lang, made.entry_count, made.ready) == ("Ops", "EN", "ES", 2,
                                                                                              True)
    assert made.creation_time == NOW
    from_csv = translator.create_glossary_from_csv("CSV", "EN", "ES", "server,servidor\n")
    assert [g.glossary_id for g in translator.list_glossaries()] == [made.glossary_id, from_csv.glossary_id]
    assert translator.get_glossary(made.glossary_id).name == "Ops"
    assert translator.get_glossary_entries(made) == entries
    translator.delete_glossary(made)
    with pytest.raises(deepl.GlossaryNotFoundException):
        translator.get_glossary(made.glossary_id)
    with pytest.raises(deepl.DeepLException, match="duplicates source term"):
        translator.create_glossary_from_csv("Dup", "EN", "ES", "a,b\na,c\n")
    with pytest.raises(deepl.AuthorizationException):
        deepl.Translator("nope", server_url=server_url).list_glossaries()
