"""DeepL v3 multilingual glossaries (/v3/glossaries*) over the store /v2 uses, driven by the official `deepl` SDK."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import deepl
import pytest
from api_fakes import AUTH, NOW, FakeGlossaryService
from deepl.api_data import MultilingualGlossaryDictionaryEntries as Dict
from starlette.applications import Starlette
from starlette.testclient import TestClient

from bench._http import serve_in_thread
from peakgate.api.contract import Language
from peakgate.api.endpoint import to_route
from peakgate.api.glossaries import glossary_operations
from peakgate.api.glossaries_v3 import glossary_v3_operations
from peakgate.glossary import build_glossary_store

LANGUAGES = (Language("en", "English", ("es", "fr")), Language("es", "Spanish", ("en",)))


def _app(tmp_path: Path) -> Starlette:
    service = FakeGlossaryService(build_glossary_store("sqlite", tmp_path / "glossaries.sqlite3", wall=lambda: NOW),
                                  offered=LANGUAGES)
    operations = [*glossary_operations(service), *glossary_v3_operations(service)]
    return Starlette(routes=[to_route(op, service.metrics) for op in operations])


@pytest.fixture
def server_url(tmp_path: Path) -> Iterator[str]:
    with serve_in_thread(_app(tmp_path)) as url:
        yield url


@pytest.fixture
def http(tmp_path: Path) -> Iterator[TestClient]:
    with TestClient(_app(tmp_path), raise_server_exceptions=False) as client:
        yield client


def test_sdk_multilingual_crud_and_listing(server_url: str) -> None:
    client = deepl.DeepLClient("acme-key", server_url=server_url, send_platform_info=False)
    made = client.create_multilingual_glossary("Ops", [
        Dict("EN", "ES", {"server": "servidor", "account": "cuenta"}),
        Dict("EN", "FR", {"server": "serveur"}),
    ])
    assert (made.name, made.creation_time) == ("Ops", NOW)
    assert [(d.source_lang, d.target_lang, d.entry_count) for d in made.dictionaries] == [
        ("EN", "ES", 2), ("EN", "FR", 1)]
    v2 = deepl.Translator("acme-key", server_url=server_url).create_glossary("Old", "EN", "ES", {"file": "archivo"})
    listed = client.list_multilingual_glossaries()  # v2 glossaries list too: one dictionary each
    assert [g.glossary_id for g in listed] == [made.glossary_id, v2.glossary_id]
    assert client.get_multilingual_glossary(made.glossary_id).name == "Ops"

    entries = client.get_multilingual_glossary_entries(made, "EN", "ES").dictionaries[0]
    assert (entries.source_lang, entries.target_lang, entries.entries) == (
        "en", "es", "server\tservidor\naccount\tcuenta")  # the SDK hands the TSV over as it came
    renamed = client.update_multilingual_glossary_name(made, "Ops 2")
    assert renamed.name == "Ops 2"
    merged = client.update_multilingual_glossary_dictionary(
        made, Dict("EN", "ES", {"account": "cuenta de usuario", "x": "y"}))
    assert [d.entry_count for d in merged.dictionaries] == [3, 1]
    assert client.get_multilingual_glossary_entries(made, "EN", "ES").dictionaries[0].entries == (
        "server\tservidor\naccount\tcuenta de usuario\nx\ty")  # merged: known term updated, new one appended
    replaced = client.replace_multilingual_glossary_dictionary_from_csv(made, "EN", "FR", "file,fichier\nkey,clé\n")
    assert (replaced.target_lang, replaced.entry_count) == ("FR", 2)
    client.delete_multilingual_glossary_dictionary(made, source_lang="EN", target_lang="FR")
    assert [d.target_lang for d in client.get_multilingual_glossary(made.glossary_id).dictionaries] == ["ES"]

    client.delete_multilingual_glossary(made)
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_multilingual_glossary(made.glossary_id)
    rival = deepl.DeepLClient("rival-key", server_url=server_url, send_platform_info=False)
    assert rival.list_multilingual_glossaries() == []
    with pytest.raises(deepl.GlossaryNotFoundException):  # another tenant's glossary is as good as absent
        rival.delete_multilingual_glossary(v2.glossary_id)


def test_sdk_errors_for_a_missing_pair_and_an_unserved_one(server_url: str) -> None:
    client = deepl.DeepLClient("acme-key", server_url=server_url, send_platform_info=False)
    made = client.create_multilingual_glossary_from_csv("CSV", "EN", "ES", "server,servidor\n")
    with pytest.raises(deepl.GlossaryNotFoundException, match="no en→fr dictionary"):
        client.get_multilingual_glossary_entries(made, "EN", "FR")
    with pytest.raises(deepl.DeepLException, match="Unsupported glossary language pair"):
        client.create_multilingual_glossary("Bad", [Dict("ES", "FR", {"a": "b"})])


def test_multi_dictionary_glossaries_stay_out_of_v2(http: TestClient) -> None:
    dictionaries = [{"source_lang": "en", "target_lang": t, "entries": "a\tb", "entries_format": "tsv"}
                    for t in ("es", "fr")]
    made = http.post("/v3/glossaries", json={"name": "Two", "dictionaries": dictionaries}, headers=AUTH)
    assert made.status_code == 201, made.text
    gid = made.json()["glossary_id"]
    assert http.get("/v2/glossaries", headers=AUTH).json() == {"glossaries": []}
    assert http.get(f"/v2/glossaries/{gid}", headers=AUTH).status_code == 404
    assert "/v3/glossaries" in http.get(f"/v2/glossaries/{gid}/entries", headers=AUTH).json()["message"]


@pytest.mark.parametrize(("method", "path", "body", "fragment"), [
    ("POST", "/v3/glossaries", {"name": "x", "dictionaries": []}, "at least one dictionary"),
    ("POST", "/v3/glossaries", {"name": "x", "dictionaries": [
        {"source_lang": "en", "target_lang": "es", "entries": "no tab here"}]}, "line 1"),
    ("POST", "/v3/glossaries", {"name": "x", "dictionaries": [
        {"source_lang": "en", "target_lang": "es", "entries": "a\tb", "entries_format": "xlsx"}]}, "tsv or csv"),
])
def test_bad_input_is_400_with_a_message(http: TestClient, method: str, path: str, body: dict[str, object],
                                         fragment: str) -> None:
    reply = http.request(method, path, json=body, headers=AUTH)
    assert reply.status_code == 400
    assert fragment in reply.json()["message"]


def test_patch_and_put_on_a_missing_glossary_are_404(http: TestClient) -> None:
    entries = {"source_lang": "en", "target_lang": "es", "entries": "a\tb"}
    assert http.patch("/v3/glossaries/nope", json={"name": "n"}, headers=AUTH).status_code == 404
    assert http.put("/v3/glossaries/nope/dictionaries", json=entries, headers=AUTH).status_code == 404
    made = http.post("/v3/glossaries", json={"name": "x", "dictionaries": [entries]}, headers=AUTH).json()
    reply = http.patch(f"/v3/glossaries/{made['glossary_id']}", json={}, headers=AUTH)
    assert (reply.status_code, reply.json()["message"]) == (400, "nothing to change: send `name` or `dictionaries`")
