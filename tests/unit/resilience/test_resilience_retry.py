"""Retry budget exhaustion and refill on a FakeClock; deadline-aware backoff."""

from __future__ import annotations

import pytest

from peakgate.clock import FakeClock
from peakgate.resilience.retry import RetryBudget, backoff_delay_s, retry_allowed
from peakgate.resilience.settings import RetryBudgetConfig

CFG = RetryBudgetConfig(ratio=0.2, min_retries_per_s=0.1, window_s=10.0, backoff_base_s=0.1, backoff_max_s=1.0)


def test_pure_budget() -> None:
    # 0.2 * 100 + 0.1 * 10 = 21 retries allowed
    assert retry_allowed(100, 20, CFG)
    assert not retry_allowed(100, 21, CFG)
    assert retry_allowed(0, 0, CFG)  # the floor lets one retry through with no traffic
    assert not retry_allowed(0, 1, CFG)


def test_budget_exhausts_and_refills() -> None:
    clock = FakeClock()
    budget = RetryBudget(CFG, clock)
    for _ in range(50):
        budget.record_request()
    granted = sum(budget.try_retry() for _ in range(30))
    assert granted == 11  # 0.2 * 50 + 1
    assert not budget.can_retry()
    assert budget.refused == 19
    clock.advance(5.0)
    assert not budget.can_retry()  # the old counts are still in the window
    for _ in range(10):
        budget.record_request()
    assert budget.try_retry()  # 60 requests -> 13 allowed, 11 used
    assert budget.try_retry()
    assert not budget.try_retry()
    clock.advance(10.0)
    assert budget.can_retry()  # everything has aged out


def test_retries_do_not_grow_the_budget() -> None:
    clock = FakeClock()
    budget = RetryBudget(CFG.model_copy(update={"min_retries_per_s": 0.0}), clock)
    for _ in range(10):
        budget.record_request()
    assert budget.try_retry()
    assert budget.try_retry()
    assert not budget.try_retry()


def test_backoff_is_exponential_and_capped() -> None:
    delays = [backoff_delay_s(n, 0.1, 1.0, None) for n in range(1, 7)]
    assert delays == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.0, 1.0])


def test_backoff_respects_the_deadline() -> None:
    assert backoff_delay_s(3, 0.1, 1.0, 0.5) == pytest.approx(0.4)
    assert backoff_delay_s(3, 0.1, 1.0, 0.4) is None
    assert backoff_delay_s(3, 0.1, 1.0, 0.5, min_attempt_s=0.2) is None
    assert backoff_delay_s(1, 0.1, 1.0, 0.0) is None


def test_backoff_jitter_stays_in_upper_half() -> None:
    assert backoff_delay_s(2, 0.1, 1.0, None, jitter=0.0) == pytest.approx(0.1)
    assert backoff_delay_s(2, 0.1, 1.0, None, jitter=1.0) == pytest.approx(0.2)
    assert backoff_delay_s(2, 0.1, 1.0, None, jitter=0.5) == pytest.approx(0.15)


def test_backoff_rejects_attempt_zero() -> None:
    with pytest.raises(ValueError):
        backoff_delay_s(0, 0.1, 1.0, None)


def test_budget_backoff_uses_config() -> None:
    budget = RetryBudget(CFG, FakeClock())
    assert budget.backoff_s(1, 1.0) == pytest.approx(0.1)
    assert budget.backoff_s(5, 0.5) is None
