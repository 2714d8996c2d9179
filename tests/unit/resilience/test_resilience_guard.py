"""OverloadGuard at the door: a starved or late class is shed, and its queued work failed at most once a second."""

from __future__ import annotations

import pytest

from peakgate.clock import FakeClock
from peakgate.config import PriorityClass, Settings
from peakgate.errors import BackendError, BadRequest, PeakgateError, Rejected
from peakgate.observe.metrics import Metrics
from peakgate.resilience.degrade import CacheOnlyRefusal
from peakgate.resilience.guard import OverloadGuard

Call = tuple[PriorityClass, PeakgateError, float | None]


def _guard(clock: FakeClock, calls: list[Call]) -> OverloadGuard:
    settings = Settings.model_validate({})

    def shed_queued(priority: PriorityClass, error: object, drain_per_s: float | None) -> int:
        assert callable(error)
        calls.append((priority, error(None), drain_per_s))
        return 3

    return OverloadGuard(settings.resilience, settings.classes, clock, Metrics(), shed_queued=shed_queued)


async def test_a_starved_class_is_shed_and_its_queued_work_failed_at_most_once_a_second() -> None:
    clock, calls = FakeClock(), list[Call]()
    guard = _guard(clock, calls)
    guard.admit("batch", 10.0, capacity_per_s=10.0)  # nothing arrives above it: admitted
    for _ in range(100):  # interactive arrives at 10 segments/s (over the 10 s window): all the engines do
        guard.tracker.dequeued("interactive", guard.tracker.enqueued("interactive"))
    for _ in range(2):
        with pytest.raises(Rejected) as shed:
            guard.admit("batch", 10.0, capacity_per_s=10.0)
        assert "starved" in shed.value.message and shed.value.retry_after_s is not None
    assert [(priority, rate) for priority, _, rate in calls] == [("batch", None)]  # the second came within 1 s
    assert isinstance(calls[0][1], Rejected) and calls[0][1].retry_after_s is not None
    clock.advance(1.0)
    with pytest.raises(Rejected):
        guard.admit("document", 10.0, capacity_per_s=10.0)
    assert [priority for priority, _, _ in calls] == ["batch", "document"]
    guard.admit("interactive", 10.0, capacity_per_s=10.0)  # never starved by its own arrivals


async def test_a_late_class_sheds_its_doomed_queued_work_at_its_own_drain_rate() -> None:
    clock, calls = FakeClock(), list[Call]()
    guard = _guard(clock, calls)
    with pytest.raises(Rejected, match="deadline"):
        guard.admit("batch", 10.0, capacity_per_s=10.0, deadline_ms=5.0)  # too tight, but no drain rate yet
    assert calls == []
    guard.tracker.completed(20, "batch")  # batch has been answering 2 segments/s
    with pytest.raises(Rejected, match="deadline"):
        guard.admit("batch", 10.0, capacity_per_s=10.0, deadline_ms=5.0)
    assert [(priority, rate) for priority, _, rate in calls] == [("batch", pytest.approx(2.0))]
    with pytest.raises(Rejected, match="deadline"):
        guard.admit("interactive", 10.0, capacity_per_s=10.0, deadline_ms=5.0)  # top class: the door only
    assert len(calls) == 1


def _surge_left_behind(guard: OverloadGuard, clock: FakeClock, wait_s: float) -> None:
    """A surge's last served interactive requests waited `wait_s` each; then the queue emptied."""
    tokens = [guard.tracker.enqueued("interactive") for _ in range(40)]
    clock.advance(wait_s)
    for token in tokens:
        guard.tracker.dequeued("interactive", token)


async def test_shedding_recovers_after_a_surge_without_any_request_being_served() -> None:
    # Issue 19 defect 1: "interactive predicted wait 2998 ms + service would pass 3000 ms" for ten minutes after a
    # burst, in every class, because nothing admitted meant nothing updated the prediction.
    clock = FakeClock()
    guard = _guard(clock, [])
    _surge_left_behind(guard, clock, 2.998)
    for cls in ("interactive", "document", "batch"):
        with pytest.raises(Rejected) as shed:
            guard.admit(cls, 10.0, capacity_per_s=300.0)
        assert shed.value.retry_after_s is not None
    clock.advance(10.0)  # five half-lives: ~94 ms, under every class's threshold
    for cls in ("interactive", "document", "batch"):
        guard.admit(cls, 10.0, capacity_per_s=300.0)


async def test_a_class_refused_for_a_probe_interval_lets_one_request_through() -> None:
    clock = FakeClock()
    settings = Settings.model_validate({"resilience": {"shedding": {"wait_half_life_s": 1e9}}})  # no fade
    metrics = Metrics()
    guard = OverloadGuard(settings.resilience, settings.classes, clock, metrics)
    _surge_left_behind(guard, clock, 2.998)
    outcomes = []
    for _ in range(24):  # 3 s of requests every 125 ms
        try:
            guard.admit("interactive", 10.0, capacity_per_s=300.0)
            outcomes.append(True)
        except Rejected:
            outcomes.append(False)
        clock.advance(0.125)
    # the first refusal opens the interval; one probe per whole second after it, then refusals again
    assert [i for i, ok in enumerate(outcomes) if ok] == [8, 17]
    assert metrics.shed_probes.labels("interactive")._value.get() == 2


async def test_readiness_signal_says_when_interactive_work_would_miss_its_deadline() -> None:
    clock = FakeClock()
    guard = _guard(clock, [])
    assert guard.interactive_late_ms() is None
    _surge_left_behind(guard, clock, 0.5)
    assert guard.interactive_late_ms() is None  # late for its queue budget, not its deadline
    stuck = guard.tracker.enqueued("interactive")
    clock.advance(3.5)
    assert guard.interactive_late_ms() == pytest.approx(3500.0)  # the head of the queue is past the deadline
    guard.tracker.dequeued("interactive", stuck, served=False)
    clock.advance(4.0)
    assert guard.interactive_late_ms() is None  # a drained queue and a faded average: ready again


async def test_the_ladder_walks_down_within_a_minute_of_the_surge_ending() -> None:
    # Issue 19 defect 1: the degradation level stayed at 4 (batch served from cache only) long after the burst.
    clock = FakeClock()
    guard = _guard(clock, [])
    for _ in range(40):  # a surge: mostly failures, interactive waiting near its deadline
        for _ in range(50):
            guard.record(good=False)
        _surge_left_behind(guard, clock, 2.9)  # advances 2.9 s
        guard.ladder.tick(*guard.signals())
    assert guard.ladder.level == 4
    quiet_s = 0
    while guard.ladder.level > 0 and quiet_s < 300:
        clock.advance(1.0)
        quiet_s += 1
        guard.ladder.tick(*guard.signals())
    assert quiet_s <= 60, f"the ladder took {quiet_s} s to come down"


async def test_no_probe_while_work_is_queued() -> None:
    # Under real overload the refusals rest on a live queue, not on stale history: a probe would only add load.
    clock = FakeClock()
    settings = Settings.model_validate({"resilience": {"shedding": {"wait_half_life_s": 1e9}}})
    guard = OverloadGuard(settings.resilience, settings.classes, clock, Metrics())
    _surge_left_behind(guard, clock, 2.998)
    guard.tracker.enqueued("interactive")  # still queued
    for _ in range(24):
        with pytest.raises(Rejected):
            guard.admit("interactive", 10.0, capacity_per_s=300.0)
        clock.advance(0.125)


def _slo_events(metrics: Metrics, slo: str, outcome: str) -> float:
    return float(metrics.slo_events.labels(slo, outcome)._value.get())


async def test_each_class_slo_counts_what_the_guard_serves_sheds_and_fails() -> None:
    clock, metrics = FakeClock(), Metrics()
    settings = Settings.model_validate({})
    guard = OverloadGuard(settings.resilience, settings.classes, clock, metrics)
    with guard.queued("interactive", 1):
        clock.advance(0.1)  # within the 300 ms latency objective
    with guard.queued("interactive", 1):
        clock.advance(0.4)
    for error in (BackendError("engine down"), CacheOnlyRefusal("cache only"), BadRequest("no"), RuntimeError("bug")):
        with pytest.raises(type(error)), guard.queued("batch", 2):
            raise error
    _surge_left_behind(guard, clock, 2.998)
    with pytest.raises(Rejected):
        guard.admit("document", 10.0, capacity_per_s=300.0)  # shed at the door
    assert (_slo_events(metrics, "interactive_latency", "good"), _slo_events(metrics, "interactive_latency", "bad")) \
        == (1.0, 1.0)
    assert _slo_events(metrics, "interactive_availability", "good") == 2.0
    # the engine failure, the bug and the ladder's refusal turned users away; the bad request was their own
    assert _slo_events(metrics, "batch_availability", "bad") == 3.0
    assert _slo_events(metrics, "document_availability", "bad") == 1.0
    assert [metrics.class_requests.labels("batch", o)._value.get() for o in ("served", "shed", "error")] == [0, 1, 2]
    assert guard.signals()[0] == 0.0  # the ladder's own burn reads only what the service records
