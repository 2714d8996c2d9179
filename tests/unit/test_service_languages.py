"""Service on echo engines: pivot translation end to end, the languages it lists, and detected sources refused
by name."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from peakgate.backends.base import Backend
from peakgate.backends.echo_backend import EchoBackend
from peakgate.clock import FakeClock
from peakgate.config import BatcherConfig, ModelConfig, Settings
from peakgate.domain import TranslateRequest
from peakgate.errors import UnsupportedPair, UnsupportedSource
from peakgate.service import Service

PAIRS = (("en", "es"), ("es", "en"), ("es", "fr"), ("fr", "es"), ("es", "pt-br"))
TIERS = {"medium": tuple(f"echo-{s}-{t}" for s, t in PAIRS)}


def settings() -> Settings:
    models = tuple(ModelConfig(name=f"echo-{s}-{t}", engine="echo", source=s, target=t) for s, t in PAIRS)
    return Settings(models=models, tiers=TIERS, batcher=BatcherConfig(max_queue_delay_ms=0.0))


@pytest.fixture
async def svc() -> AsyncIterator[Service]:
    backends: dict[str, Backend] = {f"echo-{s}-{t}": EchoBackend(f"echo-{s}-{t}", [(s, t)]) for s, t in PAIRS}
    service = Service(settings(), clock=FakeClock(), backends=backends)
    await service.start()
    yield service
    await service.close()


async def test_a_pair_without_a_model_runs_through_the_pivot_and_says_so(svc: Service) -> None:
    result = await svc.translate(TranslateRequest(("Open the file.",), "en", "fr"), svc.authenticate(None))
    [translation] = result.translations
    assert (translation.text, translation.pivot, translation.model) == ("Open the file.", "es",
                                                                        "echo-en-es+echo-es-fr")
    registry = svc.metrics.registry
    assert registry.get_sample_value("peakgate_pivot_total", {"source": "en", "target": "fr", "pivot": "es"}) == 1
    # Each hop went through the scheduler like any request: one batch per model.
    for model in ("echo-en-es", "echo-es-fr"):
        assert registry.get_sample_value("peakgate_batch_size_count", {"model": model}) == 1


async def test_a_direct_pair_is_not_pivoted(svc: Service) -> None:
    result = await svc.translate(TranslateRequest(("Open",), "es", "fr"), svc.authenticate(None))
    assert (result.translations[0].pivot, result.translations[0].model) == (None, "echo-es-fr")


async def test_jobs_accept_pivoted_pairs_and_refuse_unserved_ones(svc: Service) -> None:
    principal = svc.authenticate(None)
    assert await svc.check_job(["one", "two"], "en", "pt-br", principal) == 6
    with pytest.raises(UnsupportedPair, match="en->de"):
        await svc.check_job(["one"], "en", "de", principal)


async def test_languages_list_what_is_served(svc: Service) -> None:
    assert {lang.code: lang.targets for lang in svc.languages()} == {
        "en": ("es", "fr", "pt-br"), "es": ("en", "fr", "pt-br"), "fr": ("en", "es", "pt-br"),
    }


async def test_german_is_refused_with_its_name_not_echoed(svc: Service) -> None:
    with pytest.raises(UnsupportedSource, match=r"detected source language German \(de, confidence"):
        await svc.translate(TranslateRequest(("Das ist scharf!",), None, "es"), svc.authenticate(None))


async def test_an_unserved_pair_names_the_pivots_tried(svc: Service) -> None:
    with pytest.raises(UnsupportedPair, match=r"no model serves en->de, directly or through a pivot"):
        await svc.translate(TranslateRequest(("Hello",), "en", "de"), svc.authenticate(None))


async def test_text_detected_in_the_target_language_comes_back_unchanged_as_deepl_does(svc: Service) -> None:
    principal = svc.authenticate(None)
    result = await svc.translate(TranslateRequest(("¿Dónde está la estación de tren?",), None, "es"), principal)
    [translation] = result.translations
    assert (translation.text, translation.detected_source, translation.origin) == (
        "¿Dónde está la estación de tren?", "es", "unchanged")
    # Named explicitly, the same pair is still refused: only detection treats it as already translated.
    with pytest.raises(UnsupportedPair):
        await svc.translate(TranslateRequest(("¿Dónde está la estación?",), "es", "es"), principal)
