"""TierRouter: explicit models, tiers and hints, fallback past DOWN models, overload skips, errors."""

from __future__ import annotations

import pytest

from peakgate.backends.base import Health
from peakgate.config import ModelConfig, PriorityClass, Settings, default_models
from peakgate.domain import Principal, TranslateRequest
from peakgate.errors import BadRequest, Unavailable, UnknownModel, UnsupportedPair
from peakgate.observe.metrics import Metrics
from peakgate.routing.router import Route, TierRouter

INT8, FP32 = "student-en-es-int8", "student-en-es-fp32"
AP_EN_ES, AP_ES_EN = "apertium-en-es", "apertium-es-en"
USER = Principal(key="k", tenant="t", priority="interactive")
# A fixed map so these tests pin routing logic, not the shipped default (which the README justifies).
TIERS = {
    "tiny": (INT8, AP_EN_ES, AP_ES_EN),
    "medium": (AP_EN_ES, INT8, AP_ES_EN),
    "large": (AP_EN_ES, FP32, INT8, AP_ES_EN),
}


class World:
    """Health and load the router reads through its callbacks."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or Settings(models=default_models(), tiers=TIERS, default_tier="tiny")
        self.health: dict[str, Health] = {}
        self.load: dict[str, float] = {}
        self.metrics = Metrics()
        self.router = TierRouter(
            self.settings, lambda m: self.health.get(m, Health.OK), lambda m: self.load.get(m, 0.0), self.metrics
        )

    def route(
        self,
        source: str = "en",
        target: str = "es",
        principal: Principal = USER,
        *,
        segments: tuple[str, ...] = ("Hello",),
        tier: str | None = None,
        model: str | None = None,
        priority: PriorityClass | None = None,
    ) -> Route:
        request = TranslateRequest(segments, source, target, tier=tier, model=model, priority=priority)
        return self.router.route(request, principal, source)

    def fallbacks(self, tier: str, model: str) -> float:
        value = self.metrics.registry.get_sample_value("peakgate_fallbacks_total", {"tier": tier, "model": model})
        return value or 0.0


def test_default_tier_first_serving_model_and_chain() -> None:
    assert World().route() == Route(tier="tiny", model=INT8, chain=(INT8, AP_EN_ES))


def test_chain_keeps_only_models_serving_the_pair() -> None:
    assert World().route("es", "en") == Route(tier="tiny", model=AP_ES_EN, chain=(AP_ES_EN,))


def test_regional_codes_match_base_language_models() -> None:
    assert World().route("EN-US", "es").model == INT8


@pytest.mark.parametrize(("tier", "expected"), [
    ("fast", "tiny"), ("balanced", "medium"), ("quality", "large"), ("medium", "medium"), ("large", "large"),
])
def test_tier_names_and_quality_hints(tier: str, expected: str) -> None:
    route = World().route(tier=tier)
    assert route.tier == expected
    assert route.model == TIERS[expected][0]


def test_hint_for_an_unconfigured_tier_falls_back_to_default() -> None:
    world = World(Settings(models=default_models(), tiers={"tiny": (INT8,)}, default_tier="tiny"))
    assert world.route(tier="quality").tier == "tiny"


def test_unknown_tier_is_bad_request() -> None:
    with pytest.raises(BadRequest, match=r"unknown tier 'ultra'.*tiny.*fast") as info:
        World().route(tier="ultra")
    assert type(info.value) is BadRequest


def test_explicit_model_wins_over_tier() -> None:
    route = World().route(tier="fast", model=FP32)
    assert route == Route(tier="large", model=FP32, chain=(FP32,))


def test_explicit_model_outside_every_tier() -> None:
    extra = ModelConfig(name="echo", engine="echo", source="en", target="es")
    world = World(Settings(models=(*default_models(), extra), tiers=TIERS))
    assert world.route(model="echo") == Route(tier="explicit", model="echo", chain=("echo",))


def test_explicit_unknown_model() -> None:
    with pytest.raises(UnknownModel, match=r"unknown model 'nope'.*apertium-en-es"):
        World().route(model="nope")


def test_explicit_model_must_serve_the_pair() -> None:
    with pytest.raises(UnsupportedPair, match="'apertium-es-en' does not serve en->es"):
        World().route(model=AP_ES_EN)


def test_explicit_model_down_is_not_substituted() -> None:
    world = World()
    world.health[FP32] = Health.DOWN
    with pytest.raises(Unavailable):
        world.route(model=FP32)


def test_falls_back_past_down_model_and_counts_it() -> None:
    world = World()
    world.health[INT8] = Health.DOWN
    assert world.route() == Route(tier="tiny", model=AP_EN_ES, chain=(AP_EN_ES,))
    assert world.fallbacks("tiny", INT8) == 1
    assert world.fallbacks("tiny", AP_EN_ES) == 0


def test_degraded_model_is_still_used() -> None:
    world = World()
    world.health[INT8] = Health.DEGRADED
    assert world.route().model == INT8


def test_overloaded_model_skipped_for_a_healthy_less_loaded_one() -> None:
    world = World()
    world.load[INT8] = 0.6  # interactive max_queue_wait_ms is 500
    world.load[AP_EN_ES] = 0.1
    assert world.route() == Route(tier="tiny", model=AP_EN_ES, chain=(AP_EN_ES, INT8))
    assert world.fallbacks("tiny", INT8) == 0  # an overload is not a failure


def test_overloaded_model_kept_when_no_later_model_is_better() -> None:
    world = World()
    world.load[INT8] = 0.6
    world.load[AP_EN_ES] = 0.9
    assert world.route().model == INT8
    world.load[AP_EN_ES] = 0.1
    world.health[AP_EN_ES] = Health.DEGRADED  # less loaded but not healthy: no skip
    assert world.route().model == INT8


def test_overload_threshold_follows_the_class() -> None:
    world = World()
    world.load[INT8] = 0.6
    world.load[AP_EN_ES] = 0.1
    document = Principal(key="k", tenant="t", priority="document")  # max_queue_wait_ms 10,000
    assert world.route(principal=document).model == INT8
    assert world.route(priority="interactive", principal=document).model == AP_EN_ES


def test_unsupported_pair_lists_available_pairs() -> None:
    with pytest.raises(UnsupportedPair, match=r"tier 'tiny' serves en->fr; available pairs: en->es, es->en"):
        World().route("en", "fr")


def test_all_serving_models_down_is_unavailable_with_retry_after() -> None:
    world = World()
    world.health[INT8] = world.health[AP_EN_ES] = Health.DOWN
    with pytest.raises(Unavailable, match="down") as info:
        world.route()
    assert info.value.retry_after_s == 5.0
    assert world.fallbacks("tiny", INT8) == world.fallbacks("tiny", AP_EN_ES) == 1


@pytest.mark.parametrize(("priority", "chars", "tier"), [
    ("batch", 2_001, "tiny"), ("batch", 2_000, "large"), ("interactive", 5_000, "large"),
])
def test_long_batch_text_goes_to_the_cheap_tier(priority: PriorityClass, chars: int, tier: str) -> None:
    world = World(Settings(models=default_models(), tiers=TIERS, default_tier="large"))
    segments = ("x" * (chars - 1), "y")
    assert world.route(segments=segments, priority=priority).tier == tier


def test_long_batch_text_keeps_an_explicit_tier() -> None:
    world = World(Settings(models=default_models(), tiers=TIERS, default_tier="large"))
    assert world.route(segments=("x" * 3_000,), priority="batch", tier="quality").tier == "large"


def test_without_tiers_all_models_form_the_default_chain() -> None:
    world = World(Settings(models=default_models()))
    assert world.route() == Route(tier="medium", model=AP_EN_ES,
                                 chain=(AP_EN_ES, INT8, FP32, "student-en-es-large-int8", "student-en-es-large-fp32"))


def test_works_without_metrics() -> None:
    router = TierRouter(Settings(models=default_models(), tiers=TIERS),
                        lambda m: Health.DOWN if m == INT8 else Health.OK, lambda m: 0.0)
    request = TranslateRequest(segments=("Hi",), source="en", target="es")
    assert router.route(request, USER, "en").model == AP_EN_ES
