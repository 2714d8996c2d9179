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
