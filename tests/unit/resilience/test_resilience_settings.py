"""Resilience config: defaults build, models are frozen and strict, cross-field rules hold."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peakgate.resilience.settings import BreakerConfig, ConcurrencyConfig, LadderConfig, ResilienceConfig


def test_defaults_build_and_nest() -> None:
    cfg = ResilienceConfig()
    assert cfg.breaker.half_open_probes >= 1
    assert cfg.ladder.burn_rate_exit < cfg.ladder.burn_rate_enter
    assert ResilienceConfig.model_validate({"breaker": {"open_s": 1.0}}).breaker.open_s == 1.0


def test_frozen_and_extra_forbidden() -> None:
    cfg = BreakerConfig()
    with pytest.raises(ValidationError):
        cfg.open_s = 3.0
    with pytest.raises(ValidationError):
        BreakerConfig.model_validate({"open_seconds": 3.0})


@pytest.mark.parametrize(
    ("model", "values"),
    [
        (BreakerConfig, {"open_s": 10.0, "max_open_s": 5.0}),
        (BreakerConfig, {"window_kind": "count", "window_size": 10, "min_requests": 20}),
        (ConcurrencyConfig, {"min_limit": 10, "initial_limit": 5}),
        (LadderConfig, {"burn_rate_enter": 2.0, "burn_rate_exit": 2.0}),
        (LadderConfig, {"queue_wait_enter_ms": 100.0, "queue_wait_exit_ms": 200.0}),
    ],
)
def test_cross_field_rules(
    model: type[BreakerConfig | ConcurrencyConfig | LadderConfig], values: dict[str, float]
) -> None:
    with pytest.raises(ValidationError):
        model.model_validate(values)
