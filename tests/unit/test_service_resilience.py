"""Service resilience on fake engines and a FakeClock: breakers, the degradation ladder, priority shedding."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from peakgate.backends.base import DecodeOptions
from peakgate.backends.echo_backend import EchoBackend
from peakgate.clock import FakeClock
from peakgate.config import BatcherConfig, KeyConfig, ModelConfig, Settings
from peakgate.domain import TranslateRequest
from peakgate.errors import EngineCrashed, Overloaded, Rejected
from peakgate.resilience.degrade import Level
from peakgate.service import Service

FP32, INT8, TINY = "m-fp32", "m-int8", "tiny-rules"
RESILIENCE = {
    "breaker": {"window_kind": "count", "window_size": 4, "min_requests": 4, "open_s": 5.0, "max_open_s": 5.0,
                "half_open_probes": 1},
    "ladder": {"enter_for_s": 0.0, "exit_for_s": 0.0, "min_dwell_s": 0.0, "tick_s": 3600.0},
}


class Flaky(EchoBackend):
    """Fails while `broken`; counts the calls that reached it."""

    broken = True

    def __init__(self, name: str, pairs: list[tuple[str, str]]) -> None:
        super().__init__(name, pairs)
        self.calls = 0

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        self.calls += 1
        if self.broken:
            raise EngineCrashed(f"{self.name} crashed")
        return await super().translate_batch(segments, source, target, options)


class Held(EchoBackend):
    """Holds every batch until `gate` is set: a saturated engine."""

    def __init__(self, name: str, pairs: list[tuple[str, str]]) -> None:
        super().__init__(name, pairs)
        self.gate = asyncio.Event()

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        await self.gate.wait()
        return await super().translate_batch(segments, source, target, options)


def settings() -> Settings:
    models = tuple(ModelConfig(name=n, engine="echo", source="en", target="es") for n in (FP32, INT8, TINY))
    return Settings.model_validate({
        "models": models, "tiers": {"large": (FP32, INT8), "medium": (INT8,), "tiny": (TINY,)},
        "default_tier": "large", "batcher": BatcherConfig(max_queue_delay_ms=0.0), "resilience": RESILIENCE,
        "keys": [KeyConfig(key="pinned", tenant="vip", pinned=True), KeyConfig(key="plain", tenant="acme")],
        "tm": {"enabled": False},
    })


async def start(**backends: EchoBackend) -> tuple[Service, FakeClock]:
    clock = FakeClock()
    made = {n: backends.get(n, EchoBackend(n, [("en", "es")])) for n in (FP32, INT8, TINY)}
    service = Service(settings(), clock=clock, backends=made)
    await service.start()
    return service, clock


def req(text: str, **kw: object) -> TranslateRequest:
    return TranslateRequest((text,), "en", "es", **kw)  # type: ignore[arg-type]


async def test_breaker_opens_on_errors_routes_around_and_closes_after_a_probe() -> None:
    flaky = Flaky(FP32, [("en", "es")])
    service, clock = await start(**{FP32: flaky})
    who = service.authenticate("plain")
    try:
        for i in range(4):  # each fails on fp32 and falls back to int8
            assert (await service.translate(req(f"t{i}"), who)).translations[0].model == INT8
        assert service.metrics.registry.get_sample_value("peakgate_breaker_state", {"model": FP32}) == 2.0
        calls = flaky.calls
        assert (await service.translate(req("while open"), who)).translations[0].model == INT8
        assert flaky.calls == calls  # open: the router skipped it, the engine saw nothing
        flaky.broken = False
        clock.advance(5.1)  # open_s passed: half-open lets one probe through, which succeeds and closes it
        assert (await service.translate(req("probe"), who)).translations[0].model == FP32
        assert service.metrics.registry.get_sample_value("peakgate_breaker_state", {"model": FP32}) == 0.0
    finally:
        await service.close()


async def test_ladder_levels_reach_routing_and_say_so() -> None:
    service, clock = await start()
    plain, vip = service.authenticate("plain"), service.authenticate("pinned")
    ladder = service._guard.ladder
    try:
        assert (await service.translate(req("a"), plain)).degraded is None
        assert ladder.tick(100.0, 0.0) is Level.L1
        assert ladder.tick(100.0, 0.0) is Level.L2
        l2 = await service.translate(req("b"), plain)
        assert (l2.degraded, l2.translations[0].model) == ("L2", INT8)  # fp32 replaced by its int8 twin
        assert ladder.tick(100.0, 0.0) is Level.L3
        l3 = await service.translate(req("c"), plain)
        assert (l3.degraded, l3.translations[0].tier) == ("L3", "tiny")
        assert (await service.translate(req("d"), vip)).translations[0].tier == "large"  # pinned keeps its tier
        assert ladder.tick(100.0, 0.0) is Level.CACHE_ONLY
        with pytest.raises(Overloaded, match="cache and TM only"):
            await service.translate(req("new batch text", priority="batch"), plain)
        clock.advance(1.0)  # the batch class's bucket paces its requests (smoothing)
        cached = await service.translate(req("c", priority="batch"), plain)  # batch still gets what is cached
        assert (cached.translations[0].origin, cached.degraded) == ("cache", "CACHE_ONLY")
        for _ in range(4):
            ladder.tick(0.0, 0.0)
        assert ladder.level is Level.NORMAL
        assert service.metrics.registry.get_sample_value("peakgate_degradation_level") == 0.0
    finally:
        await service.close()


async def test_cache_only_refusals_do_not_hold_the_ladder_up() -> None:
    # Issue 19: at CACHE_ONLY every batch miss was refused and counted as an SLO failure, so the burn rate the
    # ladder reads stayed high from its own refusals and the ladder stayed at 4 long after the surge.
    service, clock = await start()
    plain = service.authenticate("plain")
    ladder = service._guard.ladder
    try:
        while ladder.level < Level.CACHE_ONLY:
            ladder.tick(100.0, 0.0)
        for i in range(40):
            clock.advance(1.0)  # past the batch class's smoothing
            with pytest.raises(Overloaded, match="cache and TM only"):
                await service.translate(req(f"batch miss {i}", priority="batch"), plain)
        assert service._guard.signals()[0] == 0.0  # no burn from the ladder's own refusals
    finally:
        await service.close()


async def test_batch_is_shed_with_retry_after_while_interactive_waits() -> None:
    held = Held(FP32, [("en", "es")])
    service, clock = await start(**{FP32: held})
    who = service.authenticate("plain")
    try:
        waiting = [asyncio.create_task(service.translate(req(f"i{i}"), who)) for i in range(20)]
        await asyncio.sleep(0)
        for _ in range(5):
            await asyncio.sleep(0)
        clock.advance(0.4)  # interactive has waited 400 ms of its 500 ms budget: protect it
        with pytest.raises(Rejected) as shed:
            await service.translate(req("bulk", priority="batch"), who)
        assert shed.value.retry_after_s is not None and shed.value.retry_after_s >= 1.0
        labels = {"reason": "shed", "priority": "batch"}
        assert service.metrics.registry.get_sample_value("peakgate_rejected_total", labels) == 1.0
        held.gate.set()
        assert all(r.translations for r in await asyncio.gather(*waiting))  # the interactive ones all finish
    finally:
        await service.close()


async def test_l3_without_a_light_tier_keeps_serving_the_requested_tier() -> None:
    base = settings()
    service = Service(base.model_copy(update={"tiers": {"large": (FP32, INT8)}}), clock=FakeClock(),
                      backends={n: EchoBackend(n, [("en", "es")]) for n in (FP32, INT8, TINY)})
    await service.start()
    try:
        ladder = service._guard.ladder
        while ladder.level < Level.L3:
            ladder.tick(100.0, 0.0)
        result = await service.translate(req("x"), service.authenticate("plain"))
        assert (result.degraded, result.translations[0].tier) == ("L3", "large")
    finally:
        await service.close()


async def test_fallbacks_spend_the_retry_budget_and_stop_when_it_is_gone() -> None:
    base = settings()
    no_budget = base.resilience.model_copy(update={"retry": base.resilience.retry.model_copy(
        update={"ratio": 0.0, "min_retries_per_s": 0.0})})
    backends: dict[str, EchoBackend] = {FP32: Flaky(FP32, [("en", "es")]), INT8: Flaky(INT8, [("en", "es")]),
                                        TINY: EchoBackend(TINY, [("en", "es")])}
    service = Service(base.model_copy(update={"resilience": no_budget}), clock=FakeClock(), backends=backends)
    await service.start()
    try:
        with pytest.raises(EngineCrashed):
            await service.translate(req("x"), service.authenticate("plain"))
        assert backends[INT8].calls == 0  # type: ignore[attr-defined]  # no budget: no fallback attempt
        labels = {"reason": "retry_budget", "priority": "interactive"}
        assert service.metrics.registry.get_sample_value("peakgate_rejected_total", labels) == 1.0
    finally:
        await service.close()
