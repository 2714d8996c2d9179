"""Billing-period character quotas."""

from __future__ import annotations

import pytest

from peakgate.admission.quota import Quotas
from peakgate.config import KeyConfig
from peakgate.errors import QuotaExceeded


def test_quota_allows_up_to_the_limit_exactly() -> None:
    quotas = Quotas((KeyConfig(key="k", tenant="t", quota_chars=100),))
    quotas.check("k", 60)
    quotas.record("k", 60)
    quotas.check("k", 40)
    quotas.record("k", 40)
    assert quotas.usage("k") == (100, 100)
    with pytest.raises(QuotaExceeded, match="100 of 100 used"):
        quotas.check("k", 1)


def test_request_that_would_pass_the_limit_is_refused() -> None:
    quotas = Quotas((KeyConfig(key="k", tenant="t", quota_chars=100),))
    quotas.record("k", 90)
    with pytest.raises(QuotaExceeded, match="needs 20"):
        quotas.check("k", 20)


def test_unlimited_keys_report_zero_limit_and_still_count() -> None:
    quotas = Quotas((KeyConfig(key="k", tenant="t"),))
    quotas.check("k", 10**9)
    quotas.record("k", 7)
    quotas.record(None, 3)
    assert quotas.usage("k") == (7, 0)
    assert quotas.usage(None) == (3, 0)
    assert quotas.usage("never-seen") == (0, 0)


def test_reset_starts_a_new_period() -> None:
    quotas = Quotas((KeyConfig(key="k", tenant="t", quota_chars=10),))
    quotas.record("k", 10)
    quotas.reset()
    assert quotas.usage("k") == (0, 10)
    quotas.check("k", 10)


def test_a_count_billed_elsewhere_adds_to_the_local_one() -> None:
    quotas = Quotas((KeyConfig(key="k", tenant="t", quota_chars=100),))
    quotas.record("k", 30)
    assert quotas.refusal("k", 10, billed_elsewhere=60) is None
    refusal = quotas.refusal("k", 11, billed_elsewhere=60)
    assert refusal is not None and (refusal.used, refusal.limit) == (90, 100)


def test_drain_takes_every_count_and_leaves_zero() -> None:
    quotas = Quotas((KeyConfig(key="k", tenant="t", quota_chars=100),))
    quotas.record("k", 30)
    quotas.record(None, 4)
    assert quotas.drain() == {"k": 30, None: 4}
    assert quotas.drain() == {}
    assert quotas.usage("k") == (0, 100)
