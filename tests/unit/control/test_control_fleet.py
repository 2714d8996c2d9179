"""The simulator's provider: warm promotion before cold starts, scale-in order, markets, billing, spot
interruptions and their replacements, all on explicit time."""

from __future__ import annotations

import numpy as np

from peakgate.control.simulate_fleet import Fleet, FleetTimes

TIMES = FleetTimes(cold_start_s=20.0, warm_promotion_s=2.0, warm_pool=2, drain_s=5.0,
                   spot_interruptions_per_hour=0.0, spot_notice_s=120.0)


def fleet(times: FleetTimes = TIMES, burst: str = "spot") -> Fleet:
    f = Fleet(times, baseline=2, burst=burst, rng=np.random.default_rng(0))  # type: ignore[arg-type]
    f.start(3, now=0.0)
    return f


def test_start_puts_the_baseline_on_on_demand_and_the_rest_on_the_burst_market() -> None:
    f = fleet()
    assert f.serving == {"on-demand": 2, "spot": 1}
    assert f.billed() == {"on-demand": 2, "spot": 3}  # + the warm pool, ready at once


def test_scale_up_promotes_warm_replicas_first_then_cold_starts() -> None:
    f = fleet()
    f.scale_to(7, now=100.0)
    assert sorted(at for at, _m in f.starting) == [102.0, 102.0, 120.0, 120.0]
    assert f.current() == 7
    f.advance(102.0, 1.0)
    assert f.serving_total == 5
    f.advance(120.0, 1.0)
    assert f.serving_total == 7
    assert len(f.warm) == 2 and all(at == 120.0 for at, _m in f.warm)  # the pool refilled by cold starts


def test_scale_in_cancels_starting_replicas_then_drains_spot_before_on_demand() -> None:
    f = fleet()
    f.scale_to(5, now=0.0)
    f.scale_to(3, now=1.0)
    assert f.starting == [] and f.serving_total == 3
    f.scale_to(1, now=2.0)
    assert f.serving == {"on-demand": 1, "spot": 0}
    assert f.billed()["spot"] == 1 + 2 and f.billed()["on-demand"] == 1 + 1  # draining ones are still paid
    f.advance(7.0, 1.0)
    assert f.billed() == {"on-demand": 1, "spot": 2}


def test_without_spot_the_burst_runs_on_demand() -> None:
    assert fleet(burst="on-demand").serving == {"on-demand": 3, "spot": 0}


def test_an_interrupted_spot_replica_is_replaced_on_the_notice() -> None:
    times = FleetTimes(20.0, 2.0, 0, 5.0, spot_interruptions_per_hour=3600.0, spot_notice_s=120.0)
    f = fleet(times)
    f.advance(10.0, 1.0)  # the one serving spot replica is certainly hit
    assert f.interruptions == 1 and f.current() == 3
    assert f.leaving == [(130.0, "spot")] and f.starting == [(30.0, "spot")]
    f.advance(30.0, 0.0)
    assert f.serving_total == 4  # the replacement serves before the old one leaves
    f.advance(130.0, 0.0)
    assert f.serving == {"on-demand": 2, "spot": 1}
