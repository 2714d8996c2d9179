"""The pure routing policy over frozen snapshots: preference, spill at the threshold, failover, stickiness."""

from __future__ import annotations

import itertools

import pytest

from peakgate.cluster.policy import (
    ClusterView,
    NoRoute,
    Route,
    RouteContext,
    UpstreamView,
    choose,
    cluster_health,
    pick_upstream,
)

ORDER = ("shanghai", "guangzhou", "beijing")
SPILL = 0.85


def context(preferred: str = "shanghai", spill_order: dict[str, tuple[str, ...]] | None = None,
            **state: tuple[bool, float]) -> RouteContext:
    """Clusters as name=(healthy, load); unnamed ones healthy and idle; spill order: the others in ORDER."""
    orders = spill_order or {}
    views = {name: ClusterView(name, *state.get(name, (True, 0.0)),
                               orders.get(name, tuple(n for n in ORDER if n != name))) for name in ORDER}
    return RouteContext(views, preferred, SPILL, retry_after_s=2.0)


def test_the_preferred_cluster_serves_while_healthy_and_under_the_threshold() -> None:
    assert choose(context(shanghai=(True, 0.84)), None) == (Route("shanghai"), "shanghai")


def test_at_the_threshold_traffic_spills_to_the_first_fallback_under_it() -> None:
    decision, sticky = choose(context(shanghai=(True, SPILL)), None)
    assert decision == Route("guangzhou", spilled_from="shanghai")
    assert sticky == "guangzhou"


def test_spill_follows_the_fallback_order_past_a_full_fallback() -> None:
    decision, _ = choose(context(shanghai=(True, 1.0), guangzhou=(True, 0.9), beijing=(True, 0.5)), None)
    assert decision == Route("beijing", spilled_from="shanghai")


def test_a_configured_fallback_order_is_followed_over_the_default() -> None:
    ctx = context(shanghai=(True, 1.0), spill_order={"shanghai": ("beijing", "guangzhou")})
    assert choose(ctx, None)[0] == Route("beijing", spilled_from="shanghai")


def test_traffic_never_leaves_the_preferred_cluster_and_its_fallbacks() -> None:
    # guangzhou is idle but not listed: a fallback list can keep data in a jurisdiction.
    ctx = context(shanghai=(True, 1.0), beijing=(True, 0.95), spill_order={"shanghai": ("beijing",)})
    assert choose(ctx, None)[0] == Route("beijing", spilled_from="shanghai")  # least loaded of the two
    ctx = context(shanghai=(False, 0.0), beijing=(False, 0.0), spill_order={"shanghai": ("beijing",)})
    assert isinstance(choose(ctx, None)[0], NoRoute)


def test_with_every_cluster_past_the_threshold_the_least_loaded_healthy_one_serves() -> None:
    ctx = context(shanghai=(True, 1.0), guangzhou=(True, 0.95), beijing=(False, 0.0))
    assert choose(ctx, None)[0] == Route("guangzhou", spilled_from="shanghai")
    ctx = context(shanghai=(True, 0.9), guangzhou=(True, 0.95), beijing=(True, 1.0))
    assert choose(ctx, None)[0] == Route("shanghai")  # still the least loaded: not a spill


def test_equal_loads_past_the_threshold_keep_the_preference_order() -> None:
    ctx = context("guangzhou", shanghai=(True, 1.0), guangzhou=(True, 1.0), beijing=(True, 1.0))
    assert choose(ctx, None)[0] == Route("guangzhou")


def test_an_unhealthy_preferred_cluster_fails_over_to_its_next_healthy_fallback() -> None:
    ctx = context(shanghai=(False, 0.0), guangzhou=(False, 0.0))
    assert choose(ctx, None) == (Route("beijing", spilled_from="shanghai"), "beijing")


def test_no_healthy_cluster_is_a_refusal_saying_when_to_retry_and_keeps_the_sticky_cluster() -> None:
    ctx = context(shanghai=(False, 0.0), guangzhou=(False, 0.0), beijing=(False, 0.0))
    decision, sticky = choose(ctx, "guangzhou")
    assert decision == NoRoute("no healthy cluster among shanghai, guangzhou, beijing", 2.0)
    assert sticky == "guangzhou"


def test_a_sticky_tenant_keeps_its_cluster_while_it_is_healthy_and_under_the_threshold() -> None:
    assert choose(context(guangzhou=(True, 0.5)), "guangzhou") == (
        Route("guangzhou", spilled_from="shanghai"), "guangzhou")


@pytest.mark.parametrize("guangzhou", [(True, SPILL), (False, 0.0)])
def test_a_sticky_tenant_moves_when_its_cluster_fills_up_or_fails(guangzhou: tuple[bool, float]) -> None:
    assert choose(context(guangzhou=guangzhou), "guangzhou") == (Route("shanghai"), "shanghai")


def test_a_sticky_cluster_outside_the_fallbacks_is_not_followed() -> None:
    ctx = context(spill_order={"shanghai": ("beijing",)})
    assert choose(ctx, "guangzhou") == (Route("shanghai"), "shanghai")


def test_every_combination_of_health_and_load_meets_the_rules() -> None:
    states = list(itertools.product((True, False), (0.0, 0.5, SPILL, 1.0)))
    for combo, preferred, sticky in itertools.product(itertools.product(states, repeat=3), ORDER, (None, *ORDER)):
        ctx = context(preferred, **dict(zip(ORDER, combo, strict=True)))
        decision, kept = choose(ctx, sticky)
        candidates = [ctx.clusters[n] for n in (preferred, *ctx.clusters[preferred].spill_order)]
        healthy = [v for v in candidates if v.healthy]
        if not healthy:
            assert isinstance(decision, NoRoute) and kept == sticky
            continue
        assert isinstance(decision, Route) and kept == decision.cluster
        assert decision.spilled_from == (None if decision.cluster == preferred else preferred)
        chosen = ctx.clusters[decision.cluster]
        under = [v for v in healthy if v.load < SPILL]
        if sticky is not None and ctx.clusters[sticky] in under:
            assert chosen.name == sticky
        elif under:
            assert chosen == under[0]
        else:
            assert chosen.healthy and chosen.load == min(v.load for v in healthy)


def test_cluster_load_counts_the_ready_gateways_and_is_full_when_none_is_ready() -> None:
    assert cluster_health([]) == (False, 1.0)
    assert cluster_health([UpstreamView(False, False, 0, 4)]) == (False, 1.0)
    assert cluster_health([UpstreamView(True, False, 0, 4)]) == (True, 1.0)  # alive, /readyz 503: overloaded
    both = [UpstreamView(True, True, 3, 4), UpstreamView(True, True, 1, 4), UpstreamView(True, False, 9, 4)]
    assert cluster_health(both) == (True, 0.5)


def test_pick_upstream_takes_the_least_loaded_ready_gateway() -> None:
    views = [UpstreamView(True, True, 3, 4), UpstreamView(True, True, 1, 4), UpstreamView(True, False, 0, 4)]
    assert pick_upstream(views, turn=0) == 1
    assert pick_upstream([UpstreamView(True, True, 2, 2), UpstreamView(True, True, 2, 8)], turn=0) == 1


def test_pick_upstream_falls_back_to_live_gateways_and_to_none() -> None:
    assert pick_upstream([UpstreamView(False, False, 0, 4), UpstreamView(True, False, 5, 4)], turn=0) == 1
    assert pick_upstream([UpstreamView(False, False, 0, 4)], turn=0) is None


def test_pick_upstream_spreads_ties_in_turn() -> None:
    views = [UpstreamView(True, True, 0, 4)] * 3
    assert [pick_upstream(views, turn) for turn in range(4)] == [0, 1, 2, 0]
