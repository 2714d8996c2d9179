"""LocalLimiters at a share of the configured rates: the shared backend's fallback."""

from __future__ import annotations

import pytest

from peakgate.admission.backend import Admitted, OverRate
from peakgate.admission.local import LocalLimiters
from peakgate.clock import FakeClock
from peakgate.config import ClassConfig, KeyConfig, Settings

ROOMY = ClassConfig(rate_chars_per_s=1_000_000, burst_chars=1_000_000)


def test_a_share_scales_every_rate_and_burst() -> None:
    settings = Settings(keys=(KeyConfig(key="k", tenant="t", rate_chars_per_s=10, burst_chars=100),),
                        classes={"interactive": ClassConfig(rate_chars_per_s=100, burst_chars=1_000),
                                 "document": ROOMY, "batch": ROOMY})
    limiters = LocalLimiters(settings, FakeClock(), share=0.25)
    assert limiters.decide("k", 25, "interactive") == Admitted()
    assert limiters.decide("k", 1, "interactive") == OverRate(pytest.approx(0.4), "key_rate")  # 1 char at 2.5/s
    assert limiters.decide(None, 225, "interactive") == Admitted()  # the class: 250 - 25
    assert limiters.decide(None, 1, "interactive") == OverRate(pytest.approx(0.04), "class_rate")


def test_a_share_keeps_the_longest_wait_for_a_turn() -> None:
    shaped = ClassConfig(rate_chars_per_s=100, smoothing=True, max_smoothing_delay_s=1.0)
    limiters = LocalLimiters(Settings(classes={"batch": shaped}), FakeClock(), share=0.5)
    assert [limiters.decide(None, 25, "batch") for _ in range(3)] == [Admitted(0.0), Admitted(0.5), Admitted(1.0)]
    assert limiters.decide(None, 25, "batch") == OverRate(0.5, "class_rate")
