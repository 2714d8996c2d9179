"""OverloadGuard at the door: a starved or late class is shed, and its queued work failed at most once a second."""

from __future__ import annotations

import pytest

from peakgate.clock import FakeClock
from peakgate.config import PriorityClass, Settings
from peakgate.errors import PeakgateError, Rejected
from peakgate.observe.metrics import Metrics
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
