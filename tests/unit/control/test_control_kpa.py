"""The KPA-style policy on an explicit clock: windows, the 200 % panic threshold, no scale-down in panic, exit
after a stable window, the scale-up and scale-down rate limits (knative/serving autoscaler.go semantics)."""

from __future__ import annotations

import pytest
from policy_fakes import drive, last, sig

from peakgate.control.kpa import KpaConfig, KpaPolicy

POLICY = KpaPolicy(KpaConfig(target_concurrency=10.0))


def test_defaults_follow_knative() -> None:
    c = KpaConfig()
    assert (c.stable_window_s, c.panic_window_s, c.panic_threshold) == (60.0, 6.0, 2.0)
    assert (c.max_scale_up_rate, c.max_scale_down_rate, c.tick_s) == (1000.0, 2.0, 2.0)


def test_stable_desired_is_the_stable_windows_mean_concurrency_over_the_target() -> None:
    decision = last(POLICY, [sig(t, in_flight=75, replicas=8) for t in range(0, 60, 2)])
    assert (decision.desired_replicas, decision.rule) == (8, "stable")  # ceil(75 / 10)


def test_concurrency_counts_queued_requests_too() -> None:
    assert last(POLICY, [sig(0, in_flight=40, queue=30, replicas=7)]).desired_replicas == 7


@pytest.mark.parametrize(("second", "desired"), [(59.9, 33), (60.0, 6)])
def test_the_stable_window_averages_the_last_60_seconds(second: float, desired: int) -> None:
    policy = KpaPolicy(KpaConfig(target_concurrency=10.0, max_scale_down_rate=100.0))
    readings = [sig(0, in_flight=600, replicas=60), sig(second, in_flight=60, replicas=60)]
    assert last(policy, readings).desired_replicas == desired  # ceil(mean(600, 60) / 10), or ceil(60 / 10)


def test_panic_starts_at_200_percent_of_ready_replicas() -> None:
    # ready 5: the panic window's desired count ceil(c / 10) must reach 10
    assert last(POLICY, [sig(0, in_flight=90, replicas=5)]).rule == "stable"  # 9 / 5 = 180 %
    panic = last(POLICY, [sig(0, in_flight=91, replicas=5)])  # ceil(9.1) = 10: 200 %
    assert (panic.rule, panic.desired_replicas) == ("panic", 10)


@pytest.mark.parametrize(("second", "rule"), [(5.9, "panic"), (6.0, "stable")])
def test_the_panic_window_is_six_seconds(second: float, rule: str) -> None:
    # A burst at 0 s (100 ready then: no panic); at `second` 5 are ready. The burst is in the panic window
    # (now - 6 s, now] at 5.9 s, out of it at 6 s (the stable window still averages it).
    decisions = drive(POLICY, [sig(0, in_flight=1000, replicas=100), sig(second, in_flight=0, replicas=5)])
    assert (decisions[0].rule, decisions[1].rule) == ("stable", rule)
    assert decisions[1].desired_replicas == 50  # ceil(500 / 10) either way


def test_no_scale_down_while_panicking_and_exit_after_a_stable_window() -> None:
    readings = [sig(0, in_flight=300, replicas=10)] + [sig(t, in_flight=5, replicas=30) for t in (2, 30, 60, 62)]
    decisions = drive(POLICY, readings)
    assert [d.rule for d in decisions] == ["panic", "panic", "panic", "panic", "stable"]
    assert [d.desired_replicas for d in decisions[:4]] == [30, 30, 30, 30]  # never down while panicking
    assert decisions[4].desired_replicas == 15  # stable again (60 s after the last tick over): at most halved


def test_each_tick_over_the_threshold_extends_the_panic() -> None:
    readings = [sig(0, in_flight=300, replicas=10), sig(50, in_flight=300, replicas=10),
                sig(100, in_flight=5, replicas=30), sig(111, in_flight=5, replicas=30)]
    assert [d.rule for d in drive(POLICY, readings)] == ["panic", "panic", "panic", "stable"]


def test_max_scale_up_rate_limits_growth_per_decision() -> None:
    policy = KpaPolicy(KpaConfig(target_concurrency=10.0, max_scale_up_rate=2.0))
    assert last(policy, [sig(0, in_flight=1000, replicas=5)]).desired_replicas == 10  # ceil(2 x 5)


def test_max_scale_down_rate_limits_shrinking_per_decision() -> None:
    assert last(POLICY, [sig(0, in_flight=0, replicas=10)]).desired_replicas == 5


def test_zero_ready_replicas_count_as_one() -> None:
    decision = last(POLICY, [sig(0, in_flight=15, replicas=0)])
    assert (decision.rule, decision.desired_replicas) == ("panic", 2)  # ceil(1.5) / 1 ready = 200 %
