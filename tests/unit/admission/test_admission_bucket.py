"""Token bucket and leaky-bucket pacer: exact refill arithmetic on a FakeClock."""

from __future__ import annotations

import pytest

from peakgate.admission.bucket import LeakyBucket, TokenBucket, make_limiter
from peakgate.clock import FakeClock


def test_starts_full_and_allows_a_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10, burst=100, clock=clock)
    assert bucket.try_take(60) == 0.0
    assert bucket.try_take(40) == 0.0
    assert bucket.tokens == 0.0


def test_retry_after_is_exact_and_refill_honours_it() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10, burst=100, clock=clock)
    assert bucket.try_take(100) == 0.0
    assert bucket.try_take(30) == 3.0
    clock.advance(2.5)
    assert bucket.try_take(30) == 0.5  # 25 refilled, 5 short at 10/s
    clock.advance(0.5)
    assert bucket.try_take(30) == 0.0
    assert bucket.tokens == 0.0


def test_refused_take_charges_nothing() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10, burst=100, clock=clock)
    bucket.try_take(90)
    assert bucket.try_take(20) == 1.0
    assert bucket.tokens == 10.0


def test_refill_caps_at_burst() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10, burst=100, clock=clock)
    bucket.try_take(100)
    clock.advance(1_000)
    assert bucket.tokens == 100.0


def test_float_noise_does_not_refuse() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=3, burst=3, clock=clock)
    bucket.try_take(3)
    for _ in range(10):
        clock.advance(0.1)  # 0.1 is not exact in binary: ten steps refill 3 up to rounding
    assert bucket.try_take(3) == 0.0


def test_request_bigger_than_burst_is_admitted_from_a_full_bucket_and_leaves_debt() -> None:
    clock = FakeClock()
    bucket = TokenBucket(rate=10, burst=100, clock=clock)
    bucket.try_take(50)
    assert bucket.try_take(250) == 5.0  # must wait until full, not for 250 tokens
    clock.advance(5)
    assert bucket.try_take(250) == 0.0
    assert bucket.tokens == -150.0
    assert bucket.try_take(1) == pytest.approx(15.1)  # the debt is repaid before anyone else passes


def test_clock_stepping_back_mints_nothing() -> None:
    clock = FakeClock(start=100.0)
    bucket = TokenBucket(rate=10, burst=100, clock=clock)
    bucket.try_take(100)
    clock.advance(-50)
    assert bucket.tokens == 0.0


@pytest.mark.parametrize(("rate", "burst"), [(0, 10), (-1, 10), (10, 0)])
def test_rejects_nonpositive_parameters(rate: float, burst: float) -> None:
    with pytest.raises(ValueError):
        TokenBucket(rate=rate, burst=burst, clock=FakeClock())


def test_leaky_bucket_paces_without_bursts() -> None:
    clock = FakeClock()
    pacer = LeakyBucket(rate=100, clock=clock)
    assert pacer.try_take(50) == 0.0
    assert pacer.try_take(50) == 0.5  # no burst: the second waits for the first to drain
    clock.advance(0.25)
    assert pacer.try_take(1) == 0.25
    clock.advance(0.25)
    assert pacer.try_take(50) == 0.0
    assert pacer.try_take(1) == 0.5


def test_leaky_bucket_idle_time_is_not_banked() -> None:
    clock = FakeClock()
    pacer = LeakyBucket(rate=100, clock=clock)
    clock.advance(60)
    assert pacer.try_take(100) == 0.0
    assert pacer.try_take(100) == 1.0


def test_leaky_bucket_admits_big_cost_once_free() -> None:
    clock = FakeClock()
    pacer = LeakyBucket(rate=10, clock=clock)
    assert pacer.try_take(1_000) == 0.0
    assert pacer.try_take(1) == 100.0


def test_leaky_bucket_with_a_max_delay_admits_and_says_when_each_turn_comes() -> None:
    clock = FakeClock()
    shaper = LeakyBucket(rate=100, clock=clock, max_delay_s=1.0)
    assert [shaper.wait_time(50), shaper.take(50)] == [0.0, 0.0]
    assert [shaper.wait_time(50), shaper.take(50)] == [0.0, 0.5]
    assert [shaper.wait_time(50), shaper.take(50)] == [0.0, 1.0]
    assert shaper.wait_time(50) == 0.5  # the outlet is busy 1.5 s ahead: refused, retry once 0.5 s has drained
    clock.advance(0.5)
    assert shaper.take(50) == 1.0
    with pytest.raises(ValueError, match="max_delay_s"):
        LeakyBucket(rate=1, clock=clock, max_delay_s=-1)


def test_make_limiter_picks_by_smoothing() -> None:
    clock = FakeClock()
    assert isinstance(make_limiter(1, 2, clock, smoothing=True), LeakyBucket)
    assert isinstance(make_limiter(1, 2, clock, smoothing=False), TokenBucket)
