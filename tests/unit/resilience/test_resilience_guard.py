"""OverloadGuard at the door: a starved class is shed, and its queued work is failed at most once a second."""

from __future__ import annotations

import pytest

from peakgate.clock import FakeClock
from peakgate.config import PriorityClass, Settings
from peakgate.errors import PeakgateError, Rejected
from peakgate.observe.metrics import Metrics
from peakgate.resilience.guard import OverloadGuard


def _guard(clock: FakeClock, calls: list[tuple[PriorityClass, PeakgateError]]) -> OverloadGuard:
    settings = Settings.model_validate({})

    def on_starved(priority: PriorityClass, error: object) -> int:
        assert callable(error)
        calls.append((priority, error(None)))
        return 3

    return OverloadGuard(settings.resilience, settings.classes, clock, Metrics(), on_starved=on_starved)


async def test_a_starved_class_is_shed_and_its_queued_work_failed_at_most_once_a_second() -> None:
    clock, calls = FakeClock(), []
    guard = _guard(clock, calls)
    guard.admit("batch", 10.0, capacity_per_s=10.0)  # nothing arrives above it: admitted
    for _ in range(100):  # interactive arrives at 10 segments/s (over the 10 s window): all the engines do
        guard.tracker.dequeued("interactive", guard.tracker.enqueued("interactive"))
    for _ in range(2):
        with pytest.raises(Rejected) as shed:
            guard.admit("batch", 10.0, capacity_per_s=10.0)
        assert "starved" in shed.value.message and shed.value.retry_after_s is not None
    assert [priority for priority, _ in calls] == ["batch"]  # the second shed came within the second
    assert isinstance(calls[0][1], Rejected) and calls[0][1].retry_after_s is not None
    clock.advance(1.0)
    with pytest.raises(Rejected):
        guard.admit("document", 10.0, capacity_per_s=10.0)
    assert [priority for priority, _ in calls] == ["batch", "document"]
    guard.admit("interactive", 10.0, capacity_per_s=10.0)  # never starved by its own arrivals


async def test_a_shed_that_is_not_starvation_leaves_the_queues_alone() -> None:
    clock, calls = FakeClock(), []
    guard = _guard(clock, calls)
    with pytest.raises(Rejected, match="deadline"):
        guard.admit("batch", 10.0, capacity_per_s=10.0, deadline_ms=5.0)  # its own deadline is too tight
    assert calls == []
