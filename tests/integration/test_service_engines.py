"""The whole request path on the real engines (Apertium, CTranslate2 students) and a deliberately stuck one."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import AsyncIterator, Sequence

import pytest
import pytest_asyncio

from peakgate.backends.base import DecodeOptions
from peakgate.backends.echo_backend import EchoBackend
from peakgate.config import ModelConfig, Settings, load_settings
from peakgate.domain import TranslateRequest
from peakgate.errors import DeadlineExceeded
from peakgate.service import Service


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def service() -> AsyncIterator[Service]:
    svc = Service(load_settings())
    await svc.start()
    yield svc
    await svc.close()


pytestmark = pytest.mark.asyncio(loop_scope="module")


def apertium_cli(text: str) -> str:
    return subprocess.run(["apertium", "-u", "eng-spa"], input=text, capture_output=True, text=True,
                          check=True, timeout=30).stdout.strip()


async def test_every_default_model_warms_up(service: Service) -> None:
    assert service.ready()
    assert {h.value for h in service.health().values()} == {"ok"}


@pytest.mark.parametrize(("tier", "model"), [("tiny", "apertium-en-es"), ("medium", "student-en-es-int8"),
                                             ("large", "student-en-es-large-int8")])
async def test_each_tier_serves_real_spanish(service: Service, tier: str, model: str) -> None:
    request = TranslateRequest(("Delete the folder.",), "en", "es", tier=tier)
    result = await service.translate(request, service.authenticate(None))
    assert result.translations[0].model == model
    assert "carpeta" in result.translations[0].text


async def test_tiny_tier_output_is_the_apertium_cli_output(service: Service) -> None:
    text = "Please close the door. The printer is out of paper."
    request = TranslateRequest((text,), "en", "es", tier="tiny")
    result = await service.translate(request, service.authenticate(None))
    # The service splits sentences and reassembles them; Apertium translates each alike.
    assert result.translations[0].text == " ".join(apertium_cli(s) for s in
                                                   ("Please close the door.", "The printer is out of paper."))


async def test_auto_source_routes_spanish_to_the_es_en_engine(service: Service) -> None:
    request = TranslateRequest(("La impresora no tiene papel.",), "auto", "en")
    result = await service.translate(request, service.authenticate(None))
    assert (result.translations[0].detected_source, result.translations[0].model) == ("es", "apertium-es-en")
    assert "printer" in result.translations[0].text.lower()


async def test_concurrent_clients_are_batched_and_all_answered(service: Service) -> None:
    sentences = [f"Copy {n} files to the folder" for n in range(48)]
    principal = service.authenticate(None)
    results = await asyncio.gather(*(
        service.translate(TranslateRequest((s,), "en", "es"), principal) for s in sentences
    ))
    assert all("carpeta" in r.translations[0].text for r in results)
    registry = service.metrics.registry
    batches = registry.get_sample_value("peakgate_batch_size_count", {"model": "student-en-es-int8"}) or 0.0
    segments = registry.get_sample_value("peakgate_batch_size_sum", {"model": "student-en-es-int8"}) or 0.0
    assert segments / batches > 1.5  # dynamic batching actually merged requests


class Stuck(EchoBackend):
    """Never answers: stands in for a wedged engine."""

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")


async def test_stuck_backend_ends_in_deadline_exceeded_not_a_hang() -> None:
    settings = Settings(models=(ModelConfig(name="stuck", engine="echo", source="en", target="es"),))
    svc = Service(settings, backends={"stuck": Stuck("stuck", [("en", "es")])})
    await svc.start()
    try:
        principal = svc.authenticate(None)
        requests = [TranslateRequest((f"Text {i}.",), "en", "es", deadline_ms=150) for i in range(5)]
        outcomes = await asyncio.wait_for(
            asyncio.gather(*(svc.translate(r, principal) for r in requests), return_exceptions=True), timeout=10
        )
        assert all(isinstance(o, DeadlineExceeded) for o in outcomes), outcomes
    finally:
        await asyncio.wait_for(svc.close(), timeout=10)
