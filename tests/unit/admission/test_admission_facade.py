"""The Admission facade: key and class buckets, quotas, metrics."""

from __future__ import annotations

import contextvars

import pytest

from peakgate.admission.admission import Admission
from peakgate.clock import FakeClock
from peakgate.config import ClassConfig, KeyConfig, Settings
from peakgate.errors import QuotaExceeded, RateLimited, Unauthorized
from peakgate.observe.metrics import NO_TENANT, SERVING_TENANT, Metrics

ROOMY = ClassConfig(rate_chars_per_s=1_000_000, burst_chars=1_000_000)


def make(*keys: KeyConfig, **classes: ClassConfig) -> tuple[Admission, FakeClock, Metrics]:
    clock, metrics = FakeClock(), Metrics()
    all_classes = {"interactive": ROOMY, "document": ROOMY, "batch": ROOMY, **classes}
    settings = Settings(keys=keys, classes=all_classes)
    return Admission(settings, clock, metrics), clock, metrics


def rejected(metrics: Metrics, reason: str, priority: str) -> float:
    value = metrics.registry.get_sample_value("peakgate_rejected_total", {"reason": reason, "priority": priority})
    return value or 0.0


async def test_key_bucket_limits_and_gives_retry_after() -> None:
    admission, clock, metrics = make(KeyConfig(key="k", tenant="acme", rate_chars_per_s=10, burst_chars=100))
    who = admission.authenticate("k")
    await admission.admit(who, 100)
    with pytest.raises(RateLimited, match="tenant 'acme'") as info:
        await admission.admit(who, 20)
    assert info.value.retry_after_s == 2.0
    assert rejected(metrics, "key_rate", "interactive") == 1
    clock.advance(2.0)
    await admission.admit(who, 20)


async def test_class_bucket_is_shared_across_keys() -> None:
    admission, _, metrics = make(
        KeyConfig(key="a", tenant="a", priority_class="document"),
        KeyConfig(key="b", tenant="b", priority_class="document"),
        KeyConfig(key="c", tenant="c", priority_class="interactive"),
        document=ClassConfig(rate_chars_per_s=100, burst_chars=1_000),
    )
    await admission.admit(admission.authenticate("a"), 800)
    with pytest.raises(RateLimited, match="class 'document'") as info:
        await admission.admit(admission.authenticate("b"), 300)
    assert info.value.retry_after_s == 1.0
    assert rejected(metrics, "class_rate", "document") == 1
    await admission.admit(admission.authenticate("c"), 300)  # another class has its own bucket


async def test_a_request_at_a_lower_class_draws_on_that_class_bucket() -> None:
    admission, _, metrics = make(
        KeyConfig(key="k", tenant="t", priority_class="interactive", rate_chars_per_s=1e6, burst_chars=1e6),
        interactive=ClassConfig(rate_chars_per_s=100, burst_chars=1_000),
        batch=ClassConfig(rate_chars_per_s=100, burst_chars=1_000),
    )
    who = admission.authenticate("k")
    await admission.admit(who, 1_000, "batch")
    with pytest.raises(RateLimited, match="class 'batch'"):
        await admission.admit(who, 100, "batch")
    assert rejected(metrics, "class_rate", "batch") == 1
    await admission.admit(who, 1_000)  # the key's own class still has its whole burst
    await admission.admit(who, 0, "interactive")


async def test_refusal_by_one_bucket_charges_neither() -> None:
    admission, clock, _ = make(
        KeyConfig(key="k", tenant="t", rate_chars_per_s=10, burst_chars=100),
        interactive=ClassConfig(rate_chars_per_s=10, burst_chars=50),
    )
    who = admission.authenticate("k")
    await admission.admit(who, 50)  # key: 50 left, class: 0 left
    with pytest.raises(RateLimited) as info:
        await admission.admit(who, 50)
    assert info.value.retry_after_s == 5.0  # the class wait, the longer one
    clock.advance(5.0)
    await admission.admit(who, 50)
    with pytest.raises(RateLimited) as info:
        await admission.admit(who, 100)
    # Key: 50 + 50 refilled - 50 = 50 left, 5 s short of 100. Had the refused attempt charged it, 10 s.
    assert info.value.retry_after_s == 5.0


async def test_smoothed_class_paces_without_burst() -> None:
    smoothed = ClassConfig(rate_chars_per_s=100, burst_chars=10_000, smoothing=True, max_smoothing_delay_s=0)
    admission, clock, _ = make(KeyConfig(key="k", tenant="t", priority_class="batch"), batch=smoothed)
    who = admission.authenticate("k")
    assert await admission.admit(who, 50) == 0.0
    with pytest.raises(RateLimited) as info:
        await admission.admit(who, 50)  # a token bucket with burst 10,000 would have let this through
    assert info.value.retry_after_s == 0.5
    clock.advance(0.5)
    assert await admission.admit(who, 50) == 0.0


async def test_smoothed_class_spaces_requests_out_up_to_its_max_delay() -> None:
    smoothed = ClassConfig(rate_chars_per_s=100, burst_chars=10_000, smoothing=True, max_smoothing_delay_s=1.0)
    admission, _, metrics = make(KeyConfig(key="k", tenant="t", priority_class="batch"), batch=smoothed)
    who = admission.authenticate("k")
    assert [await admission.admit(who, 50) for _ in range(3)] == [0.0, 0.5, 1.0]  # each waits for the one before
    with pytest.raises(RateLimited) as info:
        await admission.admit(who, 50)  # its turn would come 1.5 s from now: 0.5 s past the longest wait
    assert info.value.retry_after_s == 0.5
    assert rejected(metrics, "class_rate", "batch") == 1


async def test_quota_checked_before_rates_and_billed_by_record() -> None:
    admission, _, metrics = make(KeyConfig(key="k", tenant="t", quota_chars=100))
    who = admission.authenticate("k")
    await admission.admit(who, 100)
    assert await admission.usage(who) == (0, 100)  # admit does not bill
    await admission.record(who, 100)
    assert await admission.usage(who) == (100, 100)
    with pytest.raises(QuotaExceeded):
        await admission.admit(who, 1)
    assert rejected(metrics, "quota", "interactive") == 1
    await admission.reset_period()
    await admission.admit(who, 1)


async def test_quota_alone_is_checked_for_jobs_and_no_bucket_is_charged() -> None:
    admission, _, metrics = make(KeyConfig(key="k", tenant="t", quota_chars=100, rate_chars_per_s=1,
                                           burst_chars=10))
    who = admission.authenticate("k")
    with pytest.raises(QuotaExceeded, match="needs 101"):
        await admission.check_quota(who, 101, "batch")
    assert rejected(metrics, "quota", "batch") == 1
    await admission.check_quota(who, 100, "batch")  # far over the key's burst: a job is paced by its runner instead
    await admission.record(who, 100)
    assert await admission.usage(who) == (100, 100)
    await admission.reset_period()
    await admission.admit(who, 10)  # the key's bucket is still full


async def test_open_mode_has_only_the_class_bucket() -> None:
    admission, _, _ = make(interactive=ClassConfig(rate_chars_per_s=10, burst_chars=100_000))
    who = admission.authenticate(None)
    assert admission.open_mode
    await admission.admit(who, 100_000)  # far beyond KeyConfig's default burst: no per-key bucket applies
    with pytest.raises(RateLimited):
        await admission.admit(who, 1)
    await admission.record(who, 5)
    assert await admission.usage(who) == (5, 0)


def test_bad_key_is_counted() -> None:
    admission, _, metrics = make(KeyConfig(key="k", tenant="t"))
    with pytest.raises(Unauthorized):
        admission.authenticate("wrong")
    assert rejected(metrics, "unauthorized", "unknown") == 1


async def test_negative_characters_are_a_bug() -> None:
    admission, _, _ = make()
    with pytest.raises(ValueError):
        await admission.admit(admission.authenticate(None), -1)


async def test_zero_characters_always_pass() -> None:
    admission, _, _ = make(KeyConfig(key="k", tenant="t", rate_chars_per_s=1, burst_chars=1, quota_chars=0))
    who = admission.authenticate("k")
    await admission.admit(who, 0)
    await admission.admit(who, 0)


def test_authenticating_names_the_tenant_for_the_requests_metrics() -> None:
    admission, _, _ = make(KeyConfig(key="k", tenant="acme"))
    context = contextvars.copy_context()  # as each request runs in a context of its own
    context.run(admission.authenticate, "k")
    assert context.run(SERVING_TENANT.get) == "acme"
    refused = contextvars.copy_context()
    with pytest.raises(Unauthorized):
        refused.run(admission.authenticate, "wrong")
    assert refused.run(SERVING_TENANT.get) == NO_TENANT
