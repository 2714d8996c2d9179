"""Cache, translation memory, glossaries and PII de-identification in the served process, on the real engines,
a real Redis L2 and the real SQLite stores under the server's data directory."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import deepl
import httpx
import pytest
from redis_harness import RedisServer, free_port, redis_server_binary

from bench._http import Server, serve

TMX = """<?xml version="1.0" encoding="UTF-8"?>
<tmx version="1.4"><header srclang="en" datatype="plaintext" segtype="sentence" adminlang="en" o-tmf="test"
 creationtool="test" creationtoolversion="1"/><body>
<tu><tuv xml:lang="en"><seg>Open the settings window</seg></tuv>
    <tuv xml:lang="es"><seg>Abra la ventana de configuración</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg>Write to john.doe@example.com today</seg></tuv>
    <tuv xml:lang="es"><seg>Escriba hoy a john.doe@example.com</seg></tuv></tu>
<tu><tuv xml:lang="en"><seg></seg></tuv><tuv xml:lang="es"><seg>vacío</seg></tuv></tu>
</body></tmx>
"""
PII = ("john.doe@example.com", "+34 612 345 678", "4111 1111 1111 1111", "ES9121000418450200051332")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, RedisServer, Path, Path]]:
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server not found (.ci/run installs it)")
    data = tmp_path_factory.mktemp("data")
    log = data / "server.log"
    config: dict[str, object] = {"data_dir": str(data), "log_level": "debug"}
    tmx = data / "import.tmx"
    tmx.write_text(TMX, encoding="utf-8")
    config_file = data / "config.json"
    redis = RedisServer(binary, free_port())
    redis.start()
    config["cache"] = {"backend": "redis", "redis_url": redis.url}
    config_file.write_text(json.dumps(config))
    # `tm import` before `serve`: the server must serve what was imported into its data directory.
    imported = subprocess.run([sys.executable, "-m", "peakgate.cli", "tm", "import", str(tmx), "--config",
                               str(config_file)], capture_output=True, timeout=60, check=False)
    assert imported.returncode == 0, imported.stderr
    assert b"2 added" in imported.stderr and b"empty: 1" in imported.stderr
    try:
        with serve(config, log=log) as server:
            yield server, redis, data, log
    finally:
        redis.stop()


def translate(server: Server, *segments: str) -> list[dict[str, object]]:
    reply = httpx.post(f"{server.url}/v1/translate", json={"segments": list(segments), "source": "en",
                                                           "target": "es"}, timeout=30)
    assert reply.status_code == 200, reply.text
    translations: list[dict[str, object]] = reply.json()["translations"]
    return translations


def test_repeated_text_is_served_from_the_cache_recased(served: tuple[Server, RedisServer, Path, Path]) -> None:
    server = served[0]
    first, = translate(server, "Print the current page.")
    assert first.get("origin", "engine") == "engine"
    again, lower = translate(server, "Print the current page.", "print the current page")
    assert again == first | {"origin": "cache"}
    assert lower["origin"] == "cache"
    assert lower["text"] == str(first["text"])[0].lower() + str(first["text"])[1:].rstrip(".")
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'peakgate_segments_served_total{origin="cache"}' in metrics


def test_imported_tm_serves_exact_and_repairs_one_span(served: tuple[Server, RedisServer, Path, Path]) -> None:
    server = served[0]
    exact, = translate(server, "Open the settings window")
    assert exact["text"] == "Abra la ventana de configuración"
    assert (exact["origin"], exact["tm_score"]) == ("tm_exact", 1.0)
    repaired, = translate(server, "Open the settings folder")
    assert repaired["origin"] == "tm_repaired", repaired
    assert str(repaired["text"]).startswith("Abra la ") and "configuración" in str(repaired["text"])
    assert "ventana" not in str(repaired["text"])
    assert 0.75 <= float(str(repaired["tm_score"])) < 1.0


def test_imported_pii_is_stored_redacted_and_still_matches(served: tuple[Server, RedisServer, Path, Path]) -> None:
    # The import stored "Write to [P1] today": the query is redacted the same way, so it matches, and the
    # value put back is the caller's own.
    hit, = translate(served[0], "Write to maria@example.org today")
    assert (hit["text"], hit["origin"]) == ("Escriba hoy a maria@example.org", "tm_exact")


def test_a_correction_wins_over_engine_output(served: tuple[Server, RedisServer, Path, Path]) -> None:
    server = served[0]
    correction = {"source_lang": "en", "target_lang": "es", "source": "Close all tabs",
                  "target": "Cierre todas las pestañas"}
    reply = httpx.post(f"{server.url}/v1/memory", json=correction)
    assert reply.status_code == 201
    served_text, = translate(server, "Close all tabs")
    assert (served_text["text"], served_text["origin"]) == ("Cierre todas las pestañas", "tm_exact")


def test_glossary_through_the_deepl_sdk(served: tuple[Server, RedisServer, Path, Path]) -> None:
    translator = deepl.Translator("dev", server_url=served[0].url)
    glossary = translator.create_glossary("ui", "EN", "ES", {"document": "expediente"})
    try:
        result = translator.translate_text("Save the document", source_lang="EN", target_lang="ES",
                                           glossary=glossary)
        assert "expediente" in str(result.text)
    finally:
        translator.delete_glossary(glossary)


def test_pii_is_restored_in_output_and_never_stored(served: tuple[Server, RedisServer, Path, Path]) -> None:
    server, redis, data, log = served
    text = (f"Write to {PII[0]} or call {PII[1]}; card {PII[2]}, account {PII[3]}.")
    out, again = translate(server, text, text)
    for value in PII:
        assert value in str(out["text"]), out
    assert again["origin"] == "cache"  # the cached entry is the placeholder form, restored per request
    httpx.post(f"{server.url}/v1/memory", json={"source_lang": "en", "target_lang": "es",
                                                "source": f"Mail {PII[0]}", "target": f"Escriba a {PII[0]}"})
    with redis.client() as client:
        stored = b"".join(k + (client.get(k) or b"") for k in client.keys("*"))
    assert stored  # the cache did write to Redis
    files = b"".join(p.read_bytes() for p in data.glob("*.sqlite3*"))
    assert files
    logged = log.read_bytes()
    for value in PII:
        for blob, where in ((stored, "redis"), (files, "sqlite"), (logged, "server log")):
            assert value.encode() not in blob, f"{value} reached {where}"
