"""The three dialects over the real Service on echo engines: pivot marking (a field in /v1, a header everywhere),
the language lists, DeepL's regional codes, and a detected German source answered 400 by name."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from peakgate.api.app import create_app
from peakgate.api.endpoint import PIVOT_HEADER
from peakgate.backends.base import Backend
from peakgate.backends.echo_backend import EchoBackend
from peakgate.config import BatcherConfig, ModelConfig, Settings
from peakgate.service import Service

PAIRS = (("en", "es"), ("es", "en"), ("es", "fr"), ("fr", "es"), ("es", "pt-br"))


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    models = tuple(ModelConfig(name=f"echo-{s}-{t}", engine="echo", source=s, target=t) for s, t in PAIRS)
    backends: dict[str, Backend] = {m.name: EchoBackend(m.name, [(m.source, m.target)]) for m in models}
    service = Service(Settings(models=models, batcher=BatcherConfig(max_queue_delay_ms=0.0)), backends=backends)
    await service.start()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=create_app(service)), base_url="http://t") as c:
        yield c
    await service.close()


async def test_native_marks_a_pivoted_translation_in_the_body_and_the_header(http: httpx.AsyncClient) -> None:
    reply = await http.post("/v1/translate", json={"segments": ["Open it"], "source": "en", "target": "fr"})
    assert reply.status_code == 200 and reply.headers[PIVOT_HEADER] == "es"
    assert reply.json()["translations"] == [{"text": "Open it", "detected_source": "en", "tier": "medium",
                                             "model": "echo-en-es+echo-es-fr", "pivot": "es"}]
    direct = await http.post("/v1/translate", json={"segments": ["Open it"], "source": "en", "target": "es"})
    assert "pivot" not in direct.json()["translations"][0] and PIVOT_HEADER not in direct.headers


async def test_deepl_and_libre_bodies_keep_their_shape_and_the_header_marks_the_pivot(http: httpx.AsyncClient) -> None:
    deepl = await http.post("/v2/translate", data={"text": "Open it", "source_lang": "EN", "target_lang": "FR"})
    assert deepl.headers[PIVOT_HEADER] == "es"
    assert set(deepl.json()["translations"][0]) == {"detected_source_language", "text", "billed_characters"}
    libre = await http.post("/translate", json={"q": "Open it", "source": "en", "target": "fr"})
    assert libre.headers[PIVOT_HEADER] == "es" and set(libre.json()) == {"translatedText"}


async def test_deepl_regional_targets_reach_their_own_model_else_the_base_one(http: httpx.AsyncClient) -> None:
    reply = await http.post("/v2/translate", data={"text": "Abrir", "source_lang": "ES", "target_lang": "PT-BR"})
    assert reply.status_code == 200 and PIVOT_HEADER not in reply.headers
    native = await http.post("/v1/translate", json={"text": "Abrir", "source": "es", "target": "pt-br"})
    assert native.json()["translations"][0]["model"] == "echo-es-pt-br"
    for target, pivot in (("EN-GB", None), ("EN-US", None), ("PT-PT", None)):
        base = await http.post("/v2/translate", data={"text": "Abrir", "source_lang": "ES", "target_lang": target})
        assert (base.status_code, base.headers.get(PIVOT_HEADER)) == (200 if target != "PT-PT" else 400, pivot)
    pivoted = await http.post("/v2/translate", data={"text": "Open", "source_lang": "EN", "target_lang": "PT-BR"})
    assert (pivoted.status_code, pivoted.headers[PIVOT_HEADER]) == (200, "es")


async def test_the_language_lists_agree_with_what_is_served(http: httpx.AsyncClient) -> None:
    native = (await http.get("/v1/languages")).json()
    assert native == [
        {"code": "en", "name": "English", "targets": ["es", "fr", "pt-br"]},
        {"code": "es", "name": "Spanish", "targets": ["en", "fr", "pt-br"]},
        {"code": "fr", "name": "French", "targets": ["en", "es", "pt-br"]},
    ]
    assert (await http.get("/languages")).json() == native
    sources = (await http.get("/v2/languages")).json()
    assert [lang["language"] for lang in sources] == ["EN", "ES", "FR"]
    targets = (await http.get("/v2/languages", params={"type": "target"})).json()
    assert [(lang["language"], lang["name"]) for lang in targets] == [
        ("EN-GB", "English (British)"), ("EN-US", "English (American)"), ("ES", "Spanish"), ("FR", "French"),
        ("PT-BR", "Portuguese (Brazilian)"),
    ]


@pytest.mark.parametrize(("path", "body"), [
    ("/v1/translate", {"json": {"text": "Das ist scharf!", "target": "es"}}),
    ("/v2/translate", {"data": {"text": "Das ist scharf!", "target_lang": "ES"}}),
    ("/translate", {"json": {"q": "Das ist scharf!", "source": "auto", "target": "es"}}),
])
async def test_a_german_source_is_a_400_naming_german_in_every_dialect(
    http: httpx.AsyncClient, path: str, body: dict[str, object]
) -> None:
    reply = await http.post(path, **body)  # type: ignore[arg-type]
    assert reply.status_code == 400
    assert "detected source language German (de, confidence" in reply.text
