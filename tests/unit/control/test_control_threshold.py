"""The seed's threshold policy, on an explicit clock: every default threshold at its boundary, every duration
one second short and exact, every cooldown one second short and exact."""

from __future__ import annotations

import pytest
from policy_fakes import drive, last, sig
from pydantic import ValidationError

from peakgate.control.threshold import Level, ThresholdConfig, ThresholdPolicy

POLICY = ThresholdPolicy(ThresholdConfig())
REPLICAS = 4


def test_the_defaults_are_the_seeds() -> None:
    c = ThresholdConfig()
    assert (c.cpu, c.gpu_memory, c.queue) == (
        Level(threshold=0.70, for_s=120, step=2, cooldown_s=180),
        Level(threshold=0.80, for_s=60, step=3, cooldown_s=120),
        Level(threshold=50, for_s=0, step=5, cooldown_s=0),
    )
    assert c.scale_in == Level(threshold=0.30, periods=3, step=1, cooldown_s=300)
    assert c.requests == Level(threshold=1000, periods=1, step=1, cooldown_s=60)
    assert c.tick_s == 60


# --- CPU >= 70 % for 2 min -> +2, cooldown 3 min ---

@pytest.mark.parametrize(("cpu", "fires"), [(0.699, False), (0.70, True)])
def test_cpu_threshold_boundary(cpu: float, fires: bool) -> None:
    decision = last(POLICY, [sig(t, cpu=cpu) for t in (0, 60, 120)])
    assert (decision.desired_replicas, decision.rule) == ((REPLICAS + 2, "cpu") if fires else (REPLICAS, "hold"))


@pytest.mark.parametrize(("second", "fires"), [(119, False), (120, True)])
def test_cpu_must_hold_for_two_minutes(second: float, fires: bool) -> None:
    decision = last(POLICY, [sig(0, cpu=0.9), sig(second, cpu=0.9)])
    assert decision.desired_replicas == (REPLICAS + 2 if fires else REPLICAS)


def test_cpu_duration_restarts_when_a_reading_drops_below() -> None:
    decisions = drive(POLICY, [sig(0, cpu=0.9), sig(60, cpu=0.5), sig(120, cpu=0.9), sig(180, cpu=0.9),
                               sig(240, cpu=0.9)])
    assert [d.rule for d in decisions] == ["hold", "hold", "hold", "hold", "cpu"]


@pytest.mark.parametrize(("second", "fires"), [(299, False), (300, True)])
def test_cpu_cooldown_is_three_minutes_since_it_fired(second: float, fires: bool) -> None:
    decisions = drive(POLICY, [sig(0, cpu=0.9), sig(120, cpu=0.9), sig(second, cpu=0.9)])
    assert decisions[1].rule == "cpu"
    assert decisions[2].rule == ("cpu" if fires else "hold")


# --- GPU memory >= 80 % for 1 min -> +3, cooldown 2 min ---

@pytest.mark.parametrize(("gpu", "fires"), [(0.799, False), (0.80, True)])
def test_gpu_memory_threshold_boundary(gpu: float, fires: bool) -> None:
    decision = last(POLICY, [sig(0, gpu=gpu), sig(60, gpu=gpu)])
    assert (decision.desired_replicas, decision.rule) == ((REPLICAS + 3, "gpu_memory") if fires else (REPLICAS, "hold"))


@pytest.mark.parametrize(("second", "fires"), [(59, False), (60, True)])
def test_gpu_memory_must_hold_for_one_minute(second: float, fires: bool) -> None:
    assert last(POLICY, [sig(0, gpu=0.9), sig(second, gpu=0.9)]).desired_replicas == (REPLICAS + 3 if fires else 4)


@pytest.mark.parametrize(("second", "fires"), [(179, False), (180, True)])
def test_gpu_memory_cooldown_is_two_minutes(second: float, fires: bool) -> None:
    decisions = drive(POLICY, [sig(0, gpu=0.9), sig(60, gpu=0.9), sig(second, gpu=0.9)])
    assert decisions[1].rule == "gpu_memory"
    assert decisions[2].rule == ("gpu_memory" if fires else "hold")


def test_no_gpu_never_fires_the_gpu_level() -> None:
    assert last(POLICY, [sig(t, gpu=None) for t in range(0, 600, 60)]).rule == "hold"


# --- queue >= 50 -> +5 at once, no cooldown ---

@pytest.mark.parametrize(("queue", "fires"), [(49, False), (50, True)])
def test_queue_threshold_fires_on_the_first_reading(queue: int, fires: bool) -> None:
    decision = last(POLICY, [sig(0, queue=queue)])
    assert (decision.desired_replicas, decision.rule) == ((REPLICAS + 5, "queue") if fires else (REPLICAS, "hold"))


def test_queue_has_no_cooldown() -> None:
    decisions = drive(POLICY, [sig(t, queue=80) for t in (0, 1, 2)])
    assert [d.desired_replicas for d in decisions] == [REPLICAS + 5] * 3


# --- request count >= 1000 per replica over one period -> +1, cooldown 60 s (the seed's JSON template) ---

@pytest.mark.parametrize(("rate", "fires"), [(49.95, False), (50.0, True)])  # x 60 s / 3 replicas: 999 vs 1000
def test_request_count_boundary_for_one_period(rate: float, fires: bool) -> None:
    decision = last(POLICY, [sig(0, rate=rate, replicas=3)])
    assert (decision.desired_replicas, decision.rule) == ((4, "requests") if fires else (3, "hold"))


@pytest.mark.parametrize(("second", "fires"), [(59, False), (60, True)])
def test_request_count_cooldown_is_sixty_seconds(second: float, fires: bool) -> None:
    decisions = drive(POLICY, [sig(0, rate=50.0, replicas=3), sig(second, rate=50.0, replicas=3)])
    assert decisions[1].rule == ("requests" if fires else "hold")


# --- scale in: utilisation < 30 % for 3 periods, cooldown 300 s ---

@pytest.mark.parametrize(("cpu", "fires"), [(0.30, False), (0.299, True)])
def test_scale_in_threshold_boundary(cpu: float, fires: bool) -> None:
    decision = last(POLICY, [sig(t, cpu=cpu) for t in (0, 60, 120)])
    assert (decision.desired_replicas, decision.rule) == ((REPLICAS - 1, "scale_in") if fires else (REPLICAS, "hold"))


def test_scale_in_needs_three_consecutive_periods() -> None:
    decisions = drive(POLICY, [sig(0, cpu=0.1), sig(60, cpu=0.1), sig(120, cpu=0.5), sig(180, cpu=0.1),
                               sig(240, cpu=0.1), sig(300, cpu=0.1)])
    assert [d.rule for d in decisions] == ["hold"] * 5 + ["scale_in"]


@pytest.mark.parametrize(("second", "fires"), [(419, False), (420, True)])
def test_scale_in_cooldown_is_300_seconds(second: float, fires: bool) -> None:
    decisions = drive(POLICY, [sig(t, cpu=0.1) for t in (0, 60, 120, second)])
    assert decisions[2].rule == "scale_in"
    assert decisions[3].rule == ("scale_in" if fires else "hold")


def test_scale_in_utilisation_counts_gpu_memory_too() -> None:
    assert last(POLICY, [sig(t, cpu=0.1, gpu=0.5) for t in (0, 60, 120)]).rule == "hold"


def test_no_scale_in_while_a_scale_out_condition_holds_in_its_cooldown() -> None:
    # GPU memory fires at 60 and cools down until 180; CPU is idle all along: still no scale-in meanwhile.
    decisions = drive(POLICY, [sig(t, cpu=0.1, gpu=0.9) for t in (0, 60, 120, 150)])
    assert [d.rule for d in decisions] == ["hold", "gpu_memory", "hold", "hold"]


# --- several levels in one tick ---

def test_the_largest_step_wins_and_is_named_and_the_others_fire_later() -> None:
    decisions = drive(POLICY, [sig(0, cpu=0.9), sig(120, cpu=0.9, queue=60), sig(130, cpu=0.9)])
    assert (decisions[1].desired_replicas, decisions[1].rule) == (REPLICAS + 5, "queue")
    assert "queue" in decisions[1].reason and "also: cpu" in decisions[1].reason
    assert (decisions[2].desired_replicas, decisions[2].rule) == (REPLICAS + 2, "cpu")  # its cooldown never started


def test_steps_add_to_the_providers_current_replicas() -> None:
    assert last(POLICY, [sig(0, queue=60, replicas=3)], current=7).desired_replicas == 12


def test_levels_are_configurable_and_can_be_turned_off() -> None:
    policy = ThresholdPolicy(ThresholdConfig(cpu=Level(threshold=0.5, for_s=30, step=4), queue=None))
    decisions = drive(policy, [sig(0, cpu=0.5, queue=500), sig(30, cpu=0.5, queue=500)])
    assert [(d.desired_replicas, d.rule) for d in decisions] == [(REPLICAS, "hold"), (REPLICAS + 4, "cpu")]


def test_a_malformed_level_names_its_field() -> None:
    with pytest.raises(ValidationError, match=r"cpu\.step"):
        ThresholdConfig.model_validate({"cpu": {"threshold": 0.7, "step": 0}})
    with pytest.raises(ValidationError, match="cooldown"):
        ThresholdConfig.model_validate({"queue": {"threshold": 50, "step": 5, "cooldown": 1}})
