"""The quality gate inside Service: each segment says which model served it, and the fallback is counted."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from peakgate.backends.base import DecodeOptions
from peakgate.backends.echo_backend import EchoBackend
from peakgate.clock import FakeClock
from peakgate.config import BatcherConfig, ModelConfig, Settings
from peakgate.domain import TranslateRequest
from peakgate.quality.settings import QualityConfig
from peakgate.service import Service

FIRST, SECOND = "first", "second"


class Table(EchoBackend):
    """Translates from a table; anything else comes back unchanged (the failure the gate catches)."""

    def __init__(self, name: str, table: Mapping[str, str]) -> None:
        super().__init__(name, [("en", "es")])
        self.table = dict(table)
        self.seen: list[str] = []

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        self.seen += segments
        return [self.table.get(s, s) for s in await super().translate_batch(segments, source, target, options)]


async def service(quality: QualityConfig) -> tuple[Service, Table, Table]:
    first = Table(FIRST, {"Open the file": "Abrir el fichero"})
    second = Table(SECOND, {"Hello": "Hola", "Open the file": "Abra el archivo"})
    models = tuple(ModelConfig(name=n, engine="echo", source="en", target="es") for n in (FIRST, SECOND))
    settings = Settings(models=models, tiers={"medium": (FIRST, SECOND)}, batcher=BatcherConfig(max_queue_delay_ms=0),
                        quality=quality)
    svc = Service(settings, clock=FakeClock(), backends={FIRST: first, SECOND: second})
    await svc.start()
    return svc, first, second


async def test_each_segment_names_the_model_that_served_it() -> None:
    svc, _first, second = await service(QualityConfig(engines=("echo",)))  # the table engines play real ones
    try:
        request = TranslateRequest(("Hello", "Open the file"), "en", "es")
        result = await svc.translate(request, svc.authenticate(None))
        assert [(t.text, t.model, t.origin) for t in result.translations] == [
            ("Hola", SECOND, "engine"), ("Abrir el fichero", FIRST, "engine")]
        assert second.seen == ["Hello"]  # only the segment that failed went to the second engine
        value = svc.metrics.registry.get_sample_value("peakgate_qe_fallbacks_total",
                                                      {"model": FIRST, "reason": "identity"})
        assert value == 1
        again = await svc.translate(request, svc.authenticate(None))
        assert [t.text for t in again.translations] == ["Hola", "Abrir el fichero"]  # the better one was cached
        assert {t.origin for t in again.translations} == {"cache"}
    finally:
        await svc.close()


async def test_with_quality_estimation_off_the_first_engine_serves_everything() -> None:
    svc, _first, second = await service(QualityConfig(engines=("echo",), enabled=False))
    try:
        result = await svc.translate(TranslateRequest(("Hello",), "en", "es"), svc.authenticate(None))
        assert [(t.text, t.model) for t in result.translations] == [("Hello", FIRST)]
        assert second.seen == []
    finally:
        await svc.close()
