"""Clamps: hysteresis, step limits, then min/max; the decision keeps its rule and says what changed it."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peakgate.control.clamps import ClampConfig, clamp
from peakgate.control.contract import Decision


def go(desired: int, current: int, **config: object) -> Decision:
    return clamp(Decision(desired, "policy said so", rule="cpu"), current, ClampConfig.model_validate(config))


def test_an_unclamped_decision_passes_unchanged() -> None:
    decision = Decision(5, "policy said so", rule="cpu")
    assert clamp(decision, 3, ClampConfig()) is decision


def test_min_and_max_replicas_bound_the_decision() -> None:
    low, high = go(0, 3, min_replicas=2), go(500, 3, max_replicas=40)
    assert (low.desired_replicas, high.desired_replicas) == (2, 40)
    assert low.rule == "cpu" and "bounded to [2, 40]" not in low.reason and "bounded to [2, 100]" in low.reason


def test_step_limits() -> None:
    assert go(20, 5, max_step_up=4).desired_replicas == 9
    assert go(1, 10, max_step_down=2).desired_replicas == 8
    assert "step limited to +4" in go(20, 5, max_step_up=4).reason


@pytest.mark.parametrize(("desired", "kept"), [(9, 10), (8, 8)])
def test_hysteresis_holds_small_scale_ins(desired: int, kept: int) -> None:
    assert go(desired, 10, scale_in_hysteresis=0.2).desired_replicas == kept  # at least 2 of 10 must go


def test_hysteresis_never_touches_scale_out() -> None:
    assert go(11, 10, scale_in_hysteresis=0.5).desired_replicas == 11


def test_min_replicas_wins_over_a_step_limit() -> None:
    assert go(0, 0, min_replicas=3, max_step_up=1).desired_replicas == 3


def test_min_above_max_is_a_config_error() -> None:
    with pytest.raises(ValidationError, match="min_replicas"):
        ClampConfig(min_replicas=5, max_replicas=4)
