"""Circuit breaker transitions on a FakeClock: trip rules, exponential open time, half-open probes."""

from __future__ import annotations

import pytest

from peakgate.clock import FakeClock
from peakgate.errors import BadRequest, EngineCrashed, EngineTimeout, Unavailable
from peakgate.resilience.breaker import (
    Breakers,
    BreakerState,
    CircuitBreaker,
    FailureKind,
    Transition,
    TripContext,
    open_duration_s,
    trip_reason,
)
from peakgate.resilience.settings import BreakerConfig
from peakgate.resilience.window import WindowCounts

CFG = BreakerConfig(
    window_kind="count",
    window_size=10,
    min_requests=4,
    error_rate_threshold=0.5,
    consecutive_timeouts=3,
    open_s=2.0,
    max_open_s=10.0,
    half_open_probes=2,
)


def _tripped(clock: FakeClock, config: BreakerConfig = CFG) -> tuple[CircuitBreaker, list[Transition]]:
    seen: list[Transition] = []
    breaker = CircuitBreaker(config, clock, name="m1", on_transition=seen.append)
    for _ in range(4):
        assert breaker.allow()
        breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    return breaker, seen


def test_trip_reason_needs_min_requests_and_threshold() -> None:
    assert trip_reason(TripContext(WindowCounts(3, 3), 0, CFG)) is None  # under min_requests
    assert trip_reason(TripContext(WindowCounts(4, 1), 0, CFG)) is None  # 25% < 50%
    assert trip_reason(TripContext(WindowCounts(4, 2), 0, CFG)) is not None  # 50% >= 50%
    assert trip_reason(TripContext(WindowCounts(0, 0), 3, CFG)) is not None  # consecutive timeouts


def test_closed_opens_on_error_rate() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(CFG, clock)
    for ok in (True, True, False, True, False):
        assert breaker.allow()
        breaker.record_success(0.01) if ok else breaker.record_failure()
    assert breaker.state is BreakerState.CLOSED  # 2 of 5
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN  # 3 of 6
    assert not breaker.allow()
    assert breaker.rejected == 1


def test_consecutive_timeouts_trip_even_at_low_error_rate() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(CFG.model_copy(update={"min_requests": 100}), clock)
    breaker.record_failure(FailureKind.TIMEOUT)
    breaker.record_failure(FailureKind.TIMEOUT)
    breaker.record_success()  # breaks the run
    breaker.record_failure(FailureKind.TIMEOUT)
    breaker.record_failure(FailureKind.TIMEOUT)
    assert breaker.state is BreakerState.CLOSED
    breaker.record_failure(FailureKind.TIMEOUT)
    assert breaker.state is BreakerState.OPEN


def test_slow_success_counts_as_timeout() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(CFG.model_copy(update={"slow_call_s": 1.0, "min_requests": 100}), clock)
    for _ in range(3):
        breaker.record_success(latency_s=1.5)
    assert breaker.state is BreakerState.OPEN


def test_time_window_forgets_old_failures() -> None:
    clock = FakeClock()
    cfg = CFG.model_copy(update={"window_kind": "time", "window_s": 10.0})
    breaker = CircuitBreaker(cfg, clock)
    for _ in range(3):
        breaker.record_failure()
    clock.advance(11.0)
    breaker.record_failure()  # only 1 in the window now: under min_requests
    assert breaker.state is BreakerState.CLOSED
    for _ in range(3):
        breaker.record_failure()
    assert breaker.state is BreakerState.OPEN


def test_open_to_half_open_to_closed() -> None:
    clock = FakeClock()
    breaker, seen = _tripped(clock)
    clock.advance(1.9)
    assert not breaker.allow()
    assert breaker.retry_after_s() == pytest.approx(0.1)
    clock.advance(0.1)
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.allow()
    assert breaker.allow()
    assert not breaker.allow()  # only two probes
    breaker.record_success()
    assert breaker.state is BreakerState.HALF_OPEN
    breaker.record_success()
    assert breaker.state is BreakerState.CLOSED
    assert [(t.old, t.new) for t in seen] == [
        (BreakerState.CLOSED, BreakerState.OPEN),
        (BreakerState.OPEN, BreakerState.HALF_OPEN),
        (BreakerState.HALF_OPEN, BreakerState.CLOSED),
    ]
    assert all(t.name == "m1" for t in seen)
    assert breaker.transitions[(BreakerState.CLOSED, BreakerState.OPEN)] == 1


def test_half_open_failure_reopens_with_exponential_time() -> None:
    clock = FakeClock()
    breaker, _ = _tripped(clock)
    expected = [2.0, 4.0, 8.0, 10.0, 10.0]  # doubling, capped at max_open_s
    for i, open_s in enumerate(expected):
        assert breaker.trips == i + 1
        clock.advance(open_s - 0.01)
        assert breaker.state is BreakerState.OPEN
        clock.advance(0.01)
        assert breaker.allow()
        breaker.record_failure()
        assert breaker.state is BreakerState.OPEN


def test_successful_close_resets_open_time() -> None:
    clock = FakeClock()
    breaker, _ = _tripped(clock)
    clock.advance(2.0)
    assert breaker.allow()
    breaker.record_failure()  # second trip: 4 s
    clock.advance(4.0)
    for _ in range(2):
        assert breaker.allow()
        breaker.record_success()
    assert breaker.state is BreakerState.CLOSED
    for _ in range(4):
        breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    assert breaker.retry_after_s() == pytest.approx(2.0)


def test_open_s_pure_function() -> None:
    assert [open_duration_s(n, CFG) for n in (1, 2, 3, 4, 5)] == [2.0, 4.0, 8.0, 10.0, 10.0]


def test_check_raises_unavailable_with_retry_after() -> None:
    clock = FakeClock()
    breaker, _ = _tripped(clock)
    clock.advance(0.5)
    with pytest.raises(Unavailable) as info:
        breaker.check()
    assert info.value.retry_after_s == pytest.approx(1.5)


def test_late_results_while_open_change_nothing() -> None:
    clock = FakeClock()
    breaker, seen = _tripped(clock)
    breaker.record_success()
    breaker.record_failure()
    assert breaker.state is BreakerState.OPEN
    assert len(seen) == 1


async def test_call_records_outcomes_and_latency() -> None:
    clock = FakeClock()
    breaker = CircuitBreaker(CFG.model_copy(update={"slow_call_s": 0.5, "min_requests": 100}), clock)

    async def slow() -> str:
        clock.advance(0.6)
        return "ok"

    async def timeout() -> str:
        raise EngineTimeout("late")

    assert await breaker.call(slow) == "ok"  # slow success: a timeout
    with pytest.raises(EngineTimeout):
        await breaker.call(timeout)
    assert breaker.state is BreakerState.CLOSED
    with pytest.raises(EngineTimeout):
        await breaker.call(timeout)
    assert breaker.state is BreakerState.OPEN
    with pytest.raises(Unavailable):
        await breaker.call(slow)


async def test_call_ignores_caller_errors_and_frees_the_probe() -> None:
    clock = FakeClock()
    breaker, _ = _tripped(clock, CFG.model_copy(update={"half_open_probes": 1}))
    clock.advance(2.0)

    async def bad() -> None:
        raise BadRequest("no")

    async def crash() -> None:
        raise EngineCrashed("boom")

    with pytest.raises(BadRequest):
        await breaker.call(bad)
    assert breaker.state is BreakerState.HALF_OPEN
    assert breaker.allow()  # the probe slot came back
    breaker.record_ignored()
    with pytest.raises(EngineCrashed):
        await breaker.call(crash)
    assert breaker.state is BreakerState.OPEN


def test_breakers_per_name() -> None:
    clock = FakeClock()
    seen: list[Transition] = []
    bank = Breakers(CFG, clock, on_transition=seen.append)
    assert bank.get("a") is bank.get("a")
    for _ in range(4):
        bank.get("a").record_failure()
    assert bank.is_open("a")
    assert not bank.is_open("b")
    assert not bank.is_open("never-seen")
    assert bank.states() == {"a": BreakerState.OPEN}
    assert seen[0].name == "a"
    clock.advance(2.0)
    assert not bank.is_open("a")  # half-open: probes may go
