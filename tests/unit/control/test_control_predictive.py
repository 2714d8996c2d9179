"""The predictive policy on an explicit clock: the upper band one start-up time ahead, the observed floor and
its trend, the queue, the scale-in delay."""

from __future__ import annotations

import pytest
from policy_fakes import drive, last, sig

from peakgate.control.contract import Forecast
from peakgate.control.predictive import PredictiveConfig, PredictivePolicy

# 100 segments/s per replica at 50 %: one replica per 50/s of demand.
POLICY = PredictivePolicy(PredictiveConfig(target_utilisation=0.5, tick_s=10.0, trend_window_s=30.0))


def band(*upper: float, at_s: float = 0.0) -> Forecast:
    return Forecast(at_s=at_s, step_s=60.0, mean_per_s=upper, upper_per_s=upper)


@pytest.mark.parametrize(("startup_s", "desired"), [(49.0, 2), (50.0, 20)])
def test_provisions_for_the_upper_band_one_startup_time_ahead(startup_s: float, desired: int) -> None:
    # (startup + tick) reaches the second minute's band (1000/s) at 50 s, not at 49 s.
    decision = last(POLICY, [sig(0, capacity=100.0)], forecast=band(100.0, 1000.0), startup_s=startup_s)
    assert (decision.desired_replicas, decision.rule) == (desired, "forecast")


def test_the_look_ahead_starts_where_now_is_in_the_forecasts_minute() -> None:
    later = last(POLICY, [sig(40, capacity=100.0)], forecast=band(100.0, 1000.0), startup_s=10.0)
    assert later.desired_replicas == 20  # 40 s into the minute + 10 + 10 reaches the next one


def test_the_observed_rate_is_a_floor_under_the_forecast() -> None:
    decision = last(POLICY, [sig(0, rate=500.0, capacity=100.0)], forecast=band(100.0))
    assert (decision.desired_replicas, decision.rule) == (10, "observed")


def test_a_rising_observed_rate_is_extrapolated_to_the_same_point_ahead() -> None:
    readings = [sig(0, rate=100.0, capacity=100.0), sig(30, rate=400.0, capacity=100.0)]
    # slope 10/s, lead 30 s (the minute's mid-point) + startup 20 s + tick 10 s: 400 + 600 = 1000/s
    assert last(POLICY, readings, startup_s=20.0).desired_replicas == 20


def test_a_falling_rate_is_not_extrapolated_down() -> None:
    readings = [sig(0, rate=400.0, capacity=100.0), sig(30, rate=100.0, capacity=100.0)]
    decision = drive(POLICY, readings, startup_s=20.0)[1]
    assert "(trend 100.0/s)" in decision.reason
    assert decision.desired_replicas == 8  # 400/s a tick ago, held by the scale-in delay


def test_the_queue_is_drained_within_drain_s() -> None:
    assert last(POLICY, [sig(0, rate=100.0, queue=600, capacity=100.0)]).desired_replicas == 3  # 100 + 600/60


@pytest.mark.parametrize(("second", "desired"), [(599.0, 10), (600.0, 2)])
def test_scale_in_waits_for_the_delay(second: float, desired: int) -> None:
    readings = [sig(0, rate=500.0, capacity=100.0), sig(second, rate=100.0, capacity=100.0)]
    decisions = drive(POLICY, readings)
    assert decisions[1].desired_replicas == desired


def test_scale_out_is_immediate() -> None:
    readings = [sig(0, rate=100.0, capacity=100.0), sig(10, rate=900.0, capacity=100.0)]
    assert drive(POLICY, readings)[1].desired_replicas >= 18


def test_without_a_measured_capacity_it_holds_or_uses_the_configured_one() -> None:
    held = last(POLICY, [sig(0, rate=500.0)], current=3)
    assert (held.desired_replicas, held.reason) == (3, "hold: no measured capacity per replica")
    configured = PredictivePolicy(PredictiveConfig(target_utilisation=0.5, capacity_per_replica_per_s=100.0))
    assert last(configured, [sig(0, rate=500.0)]).desired_replicas == 10
