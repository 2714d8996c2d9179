"""Service on fake engines and a FakeClock: validation, priority, detection, fallback, billing, readiness."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Sequence

import pytest

from peakgate.admission.keys import effective_priority
from peakgate.backends.base import DecodeOptions, Health
from peakgate.backends.echo_backend import EchoBackend
from peakgate.clock import FakeClock
from peakgate.config import BatcherConfig, ClassConfig, KeyConfig, LimitsConfig, ModelConfig, Settings
from peakgate.domain import Principal, TranslateRequest
from peakgate.errors import BadRequest, EngineCrashed, InputTooLarge, QuotaExceeded, RateLimited, UnsupportedPair
from peakgate.service import Service

EN_ES, EN_ES_B, ES_EN = "echo-en-es", "echo-en-es-b", "echo-es-en"


class Crashing(EchoBackend):
    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        raise EngineCrashed(f"{self.name} crashed")


class WontStart(EchoBackend):
    async def start(self) -> None:
        raise EngineCrashed("no such model file")


def settings(**kw: object) -> Settings:
    models = (
        ModelConfig(name=EN_ES, engine="echo", source="en", target="es"),
        ModelConfig(name=EN_ES_B, engine="echo", source="en", target="es"),
        ModelConfig(name=ES_EN, engine="echo", source="es", target="en"),
    )
    base: dict[str, object] = {
        "models": models, "tiers": {"medium": (EN_ES, EN_ES_B, ES_EN)}, "default_tier": "medium",
        "batcher": BatcherConfig(max_queue_delay_ms=0.0), "limits": LimitsConfig(max_segment_chars=40, max_segments=3),
    }
    return Settings.model_validate(base | kw)


async def make(first: type[EchoBackend] = EchoBackend, **kw: object) -> Service:
    backends = {EN_ES: first(EN_ES, [("en", "es")]), EN_ES_B: EchoBackend(EN_ES_B, [("en", "es")]),
                ES_EN: EchoBackend(ES_EN, [("es", "en")])}
    service = Service(settings(**kw), clock=FakeClock(), backends=backends)
    await service.start()
    return service


@pytest.fixture
async def svc() -> AsyncIterator[Service]:
    service = await make()
    yield service
    await service.close()


def req(*segments: str, source: str | None = "en", target: str = "es") -> TranslateRequest:
    return TranslateRequest(segments, source, target)


async def test_translates_through_the_default_tier(svc: Service) -> None:
    result = await svc.translate(req("Hello there.", "Bye"), svc.authenticate(None))
    assert [t.text for t in result.translations] == ["Hello there.", "Bye"]
    assert {(t.model, t.tier, t.detected_source) for t in result.translations} == {(EN_ES, "medium", "en")}
    assert result.billed_characters == 15


@pytest.mark.parametrize(
    ("segments", "error", "says"),
    [((), BadRequest, "no text"), (("a", "b", "c", "d"), BadRequest, "too many segments"),
     (("x" * 41,), InputTooLarge, "41 characters"), (("ok", "\ud800"), BadRequest, "not valid UTF-8")],
)
async def test_bad_input_is_refused_with_a_reason(
    svc: Service, segments: tuple[str, ...], error: type[Exception], says: str
) -> None:
    with pytest.raises(error, match=says):
        await svc.translate(req(*segments), svc.authenticate(None))


async def test_unknown_pair_names_what_is_served(svc: Service) -> None:
    with pytest.raises(UnsupportedPair, match="en->de"):
        await svc.translate(req("Hello", target="de"), svc.authenticate(None))


async def test_source_is_detected_among_languages_serving_the_target(svc: Service) -> None:
    result = await svc.translate(req("¿Dónde está la estación de tren?", source="auto", target="en"),
                                 svc.authenticate(None))
    assert result.translations[0].detected_source == "es"
    assert result.translations[0].model == ES_EN


async def test_crashing_model_falls_back_along_the_chain() -> None:
    service = await make(Crashing)
    try:
        result = await service.translate(req("Hello"), service.authenticate(None))
        assert result.translations[0].model == EN_ES_B
        fallbacks = service.metrics.registry.get_sample_value(
            "peakgate_fallbacks_total", {"tier": "medium", "model": EN_ES})
        assert fallbacks == 1.0
    finally:
        await service.close()


async def test_model_that_fails_to_start_is_down_and_skipped() -> None:
    service = await make(WontStart)
    try:
        assert service.health()[EN_ES].value == "down"
        assert service.ready()
        result = await service.translate(req("Hello"), service.authenticate(None))
        assert result.translations[0].model == EN_ES_B
    finally:
        await service.close()


async def test_quota_is_billed_only_for_successful_requests() -> None:
    service = await make(keys=(KeyConfig(key="k1", tenant="acme", quota_chars=10),))
    try:
        acme = service.authenticate("k1")
        with pytest.raises(BadRequest):
            await service.translate(req("x" * 41), acme)
        assert (await service.usage(acme)).character_count == 0
        await service.translate(req("12345678"), acme)
        used = await service.usage(acme)
        assert (used.character_count, used.character_limit) == (8, 10)
        with pytest.raises(QuotaExceeded):
            await service.translate(req("123"), acme)
    finally:
        await service.close()


async def test_batch_work_sent_with_an_interactive_key_draws_on_the_batch_class_bucket() -> None:
    tight = ClassConfig(rate_chars_per_s=1.0, burst_chars=20.0)
    service = await make(classes={"interactive": tight, "batch": tight})
    try:
        who = service.authenticate(None)
        await service.translate(dataclasses.replace(req("x" * 20), priority="batch"), who)
        with pytest.raises(RateLimited, match="class 'batch'"):
            await service.translate(dataclasses.replace(req("y" * 5), priority="batch"), who)
        result = await service.translate(req("z" * 20), who)  # interactive: its own bucket is untouched
        assert result.translations[0].text == "z" * 20
    finally:
        await service.close()


async def test_a_smoothed_class_makes_a_close_follower_wait_its_turn_then_serves_it() -> None:
    paced = ClassConfig(rate_chars_per_s=10.0, burst_chars=10.0, smoothing=True, max_smoothing_delay_s=5.0)
    service = await make(classes={"batch": paced})
    try:
        who, clock = service.authenticate(None), service._clock
        assert isinstance(clock, FakeClock)
        first = await service.translate(dataclasses.replace(req("x" * 20), priority="batch"), who)
        assert first.translations[0].text == "x" * 20
        parked = clock.sleepers
        follower = asyncio.create_task(service.translate(dataclasses.replace(req("y" * 20), priority="batch"), who))
        for _ in range(5):
            await asyncio.sleep(0)
        assert not follower.done() and clock.sleepers == parked + 1  # waits its turn: 20 chars at 10/s
        clock.advance(2.0)
        assert (await follower).translations[0].text == "y" * 20
    finally:
        await service.close()


def test_a_request_cannot_raise_its_priority_above_its_key() -> None:
    assert effective_priority("interactive", "batch") == "batch"
    assert effective_priority("batch", "interactive") == "batch"
    assert effective_priority(None, "document") == "document"


async def test_languages_list_each_source_with_its_targets(svc: Service) -> None:
    langs = {lang.code: (lang.name, lang.targets) for lang in svc.languages()}
    assert langs == {"en": ("English", ("es",)), "es": ("Spanish", ("en",))}


async def test_cli_path_skips_admission(svc: Service) -> None:
    principal = Principal(key=None, tenant="cli", priority="batch")
    result = await svc.run(req("Hello"), principal, "batch")
    assert result.translations[0].text == "Hello"
    assert (await svc.usage(principal)).character_count == 0


def test_a_redis_gateway_loads_engines_only_for_its_local_fallback() -> None:
    base = {"models": [{"name": "m", "engine": "echo", "source": "en", "target": "es"}],
            "tiers": {"medium": ["m"]}, "tm": {"enabled": False}, "data_dir": None}
    remote = Service(Settings.model_validate(base | {"queue": {"backend": "redis"}}))
    assert remote._backends == {}  # the workers run the engines
    assert remote.health() == {"m": Health.DOWN}  # nothing heard from any worker yet
    assert not remote.ready()
    fallback = Service(Settings.model_validate(base | {"queue": {"backend": "redis", "fallback": "local"}}))
    assert list(fallback._backends) == ["m"]
