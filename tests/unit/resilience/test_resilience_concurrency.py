"""Gradient2 limit: grows toward max at stable low RTT, falls under rising RTT, backs off on drops."""

from __future__ import annotations

from itertools import pairwise

import pytest

from peakgate.clock import FakeClock
from peakgate.errors import BadRequest, EngineCrashed, EngineTimeout, Overloaded
from peakgate.resilience.concurrency import AdaptiveLimiter, LimitContext, LimitState, decide, initial_state
from peakgate.resilience.settings import ConcurrencyConfig

CFG = ConcurrencyConfig(initial_limit=20, min_limit=4, max_limit=100, long_window=100, short_window=5)


def _run(state: LimitState, rtts: list[float], config: ConcurrencyConfig = CFG) -> tuple[list[int], LimitState]:
    limits: list[int] = []
    for rtt in rtts:
        # A saturated service: everything the limit allows is in flight.
        ctx = LimitContext(rtt_s=rtt, in_flight=int(state.limit), dropped=False, config=config)
        limit, state = decide(ctx, state)
        limits.append(limit)
    return limits, state


def test_stable_low_rtt_grows_to_max() -> None:
    limits, state = _run(initial_state(CFG), [0.010] * 300)
    assert limits == sorted(limits)  # never shrinks
    assert limits[-1] == CFG.max_limit
    assert state.long_rtt_s == pytest.approx(0.010)


def test_rising_rtt_makes_the_limit_fall() -> None:
    _, state = _run(initial_state(CFG), [0.010] * 300)
    rising = [0.010 * (1.05**i) for i in range(1, 80)]  # queueing: RTT climbs 5% a sample, to ~0.47 s
    limits, state = _run(state, rising)
    assert limits[-1] < CFG.max_limit / 2
    assert limits[-1] >= CFG.min_limit
    tail = limits[30:]
    assert all(b <= a for a, b in pairwise(tail))  # monotone fall once queueing shows


def test_tolerance_absorbs_mild_jitter() -> None:
    _, state = _run(initial_state(CFG), [0.010] * 300)
    limits, _ = _run(state, [0.012, 0.010, 0.013, 0.011] * 20)  # within 1.5x of the baseline
    assert min(limits) == CFG.max_limit


def test_limit_never_below_min() -> None:
    limits, _ = _run(LimitState(limit=5.0, long_rtt_s=0.01, short_rtt_s=0.01), [1.0] * 100)
    assert min(limits) == CFG.min_limit


def test_app_limited_does_not_grow() -> None:
    state = initial_state(CFG)
    for _ in range(50):
        limit, state = decide(LimitContext(0.01, in_flight=3, dropped=False, config=CFG), state)
    assert limit == CFG.initial_limit


def test_drop_backs_off_multiplicatively() -> None:
    state = LimitState(limit=50.0, long_rtt_s=0.01, short_rtt_s=0.01)
    limit, after = decide(LimitContext(5.0, in_flight=50, dropped=True, config=CFG), state)
    assert limit == 45
    assert after.short_rtt_s == 0.01  # the timeout's RTT is not a service-time sample


def test_fixed_queue_size() -> None:
    cfg = CFG.model_copy(update={"queue_size": 4, "smoothing": 1.0})
    limit, _ = decide(LimitContext(0.01, 20, False, cfg), initial_state(cfg))
    assert limit == 24


def test_limiter_counts_in_flight() -> None:
    limiter = AdaptiveLimiter(CFG.model_copy(update={"initial_limit": 4}), FakeClock())
    assert all(limiter.try_acquire() for _ in range(4))
    assert not limiter.try_acquire()
    assert limiter.rejected == 1
    limiter.release(None)
    assert limiter.in_flight == 3
    assert limiter.try_acquire()
    for _ in range(4):
        limiter.release(None)
    with pytest.raises(RuntimeError):
        limiter.release(0.01)


def test_limiter_grows_when_saturated_at_low_rtt() -> None:
    limiter = AdaptiveLimiter(CFG, FakeClock())
    for _ in range(400):
        while limiter.try_acquire():
            pass
        limiter.release(0.01)
    assert limiter.limit == CFG.max_limit


async def test_slot_measures_rtt_on_the_clock_and_sheds() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(CFG.model_copy(update={"initial_limit": 4, "min_limit": 1}), clock)
    async with limiter.slot():
        clock.advance(0.25)
    assert limiter.state.short_rtt_s == pytest.approx(0.25)
    for _ in range(limiter.limit):
        assert limiter.try_acquire()
    with pytest.raises(Overloaded) as info:
        async with limiter.slot():
            pass
    assert info.value.retry_after_s == pytest.approx(CFG.reject_retry_after_s)


async def test_slot_classifies_exceptions() -> None:
    clock = FakeClock()
    limiter = AdaptiveLimiter(CFG, clock)
    with pytest.raises(BadRequest):
        async with limiter.slot():
            raise BadRequest("x")
    assert limiter.state.short_rtt_s is None  # no sample
    with pytest.raises(EngineCrashed):
        async with limiter.slot():
            clock.advance(0.001)
            raise EngineCrashed("boom")
    assert limiter.state.short_rtt_s is None  # a fast crash is no RTT sample either
    assert limiter.limit == 20
    with pytest.raises(EngineTimeout):
        async with limiter.slot():
            raise EngineTimeout("late")
    assert limiter.limit == 18  # 20 * 0.9
    assert limiter.in_flight == 0
