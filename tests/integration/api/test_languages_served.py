"""Every advertised language pair, through the served process on the real engines (`peakgate serve` with the
embedded default: the shipped models plus every installed Apertium pair), in the three dialects.

The pairs come from the same discovery the server runs, on the same machine; pairs needing a mode this machine
lacks are simply not advertised, and the tests that need a named pair skip, saying which mode is missing.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from bench._http import Server, serve
from peakgate.api.endpoint import PIVOT_HEADER
from peakgate.backends.apertium_modes import MODES_DIR
from peakgate.config import load_settings
from peakgate.routing.languages import Coverage

COVERAGE = Coverage(load_settings())  # what the router serves here, direct and pivoted
PAIRS = [(lang.code, target) for lang in COVERAGE.languages() for target in lang.targets]
SAMPLES = {  # one sentence per source language Debian has pairs for; a source without one fails, to be added here
    "en": "The printer is out of paper.", "es": "La impresora no tiene papel.", "ca": "La impressora no té paper.",
    "fr": "L'imprimante n'a plus de papier.", "pt": "A impressora não tem papel.", "it": "La stampante non ha carta.",
    "gl": "A impresora non ten papel.",
}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve({}) as running:
        yield running


def _needs(*modes: str) -> None:
    missing = [m for m in modes if not (MODES_DIR / f"{m}.mode").is_file()]
    if missing:
        pytest.skip(f"Apertium modes not installed: {', '.join(missing)} (scripts/dev-setup installs them)")


@pytest.mark.parametrize(("source", "target"), PAIRS, ids=[f"{s}->{t}" for s, t in PAIRS])
def test_every_advertised_pair_translates(server: Server, source: str, target: str) -> None:
    text = SAMPLES[source]
    reply = httpx.post(f"{server.url}/v1/translate", json={"text": text, "source": source, "target": target},
                       timeout=30)
    assert reply.status_code == 200, reply.text
    [out] = reply.json()["translations"]
    assert out["text"].strip() and out["text"] != text
    plan = COVERAGE.plan(source, target)
    assert plan is not None and out.get("pivot") == plan.pivot


def test_english_to_french_goes_through_spanish(server: Server) -> None:
    _needs("fr-es", "es-fr")
    reply = httpx.post(f"{server.url}/v2/translate", data={"text": "The printer is out of paper.",
                                                           "source_lang": "EN", "target_lang": "FR"}, timeout=30)
    assert reply.status_code == 200 and reply.headers[PIVOT_HEADER] == "es"
    assert "imprimante" in reply.json()["translations"][0]["text"].lower()
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'peakgate_pivot_total{pivot="es",source="en",target="fr"}' in metrics


def test_brazilian_portuguese_comes_from_its_own_mode(server: Server) -> None:
    _needs("es-pt_BR")
    reply = httpx.post(f"{server.url}/v1/translate", json={"text": "Abrir el archivo", "source": "es",
                                                           "target": "pt-br"}, timeout=30)
    assert reply.json()["translations"][0]["model"] == "apertium-es-pt-br"


def test_german_is_a_400_naming_german(server: Server) -> None:
    reply = httpx.post(f"{server.url}/v2/translate", data={"text": "Das ist scharf!", "target_lang": "ES"})
    assert reply.status_code == 400
    assert "detected source language German (de, confidence" in reply.json()["message"]


def test_the_language_lists_are_what_the_router_serves(server: Server) -> None:
    native = httpx.get(f"{server.url}/v1/languages").json()
    assert [(lang["code"], tuple(lang["targets"])) for lang in native] == [
        (lang.code, lang.targets) for lang in COVERAGE.languages()
    ]
    assert httpx.get(f"{server.url}/languages").json() == native
    deepl_sources = httpx.get(f"{server.url}/v2/languages").json()
    assert [lang["language"] for lang in deepl_sources] == [s.upper() for s in COVERAGE.sources]
    deepl_targets = {lang["language"] for lang in
                     httpx.get(f"{server.url}/v2/languages", params={"type": "target"}).json()}
    served_targets = {t for _, t in PAIRS}
    # Each DeepL code names a served target (EN-GB and PT-PT are served by the "en" and "pt" models).
    assert {code.lower() for code in deepl_targets} - served_targets <= {"en-gb", "en-us", "pt-pt", "pt-br"}
    assert {t.upper() for t in served_targets} - {"EN", "PT"} <= deepl_targets
    for code in sorted(deepl_targets):  # each one translates, from the first source that reaches it
        source = next(s for s in COVERAGE.sources if COVERAGE.plan(s, code.lower()))
        reply = httpx.post(f"{server.url}/v2/translate", data={"text": SAMPLES[source], "target_lang": code,
                                                               "source_lang": source.upper()}, timeout=30)
        assert reply.status_code == 200, (code, reply.text)
