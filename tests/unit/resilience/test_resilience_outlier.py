"""Outlier ejection: one stand-out replica goes, a shared failure ejects nobody, the cap holds, re-admission."""

from __future__ import annotations

from peakgate.clock import FakeClock
from peakgate.resilience.outlier import (
    Ejection,
    OutlierContext,
    OutlierDetector,
    choose_ejection,
    ejection_allowed,
    ejection_duration_s,
)
from peakgate.resilience.settings import OutlierConfig
from peakgate.resilience.window import WindowCounts

CFG = OutlierConfig(
    window_s=10.0,
    min_requests=10,
    error_rate_threshold=0.3,
    median_factor=3.0,
    ejection_s=5.0,
    max_ejection_s=12.0,
    max_ejection_percent=34.0,
)


def _feed(detector: OutlierDetector, replica: str, ok: int, failed: int) -> list[Ejection]:
    out = [detector.record(replica, True) for _ in range(ok)] + [detector.record(replica, False) for _ in range(failed)]
    return [e for e in out if e is not None]


def test_policy_ejects_the_stand_out() -> None:
    counts = {"a": WindowCounts(20, 1), "b": WindowCounts(20, 2), "c": WindowCounts(20, 12)}
    assert choose_ejection(OutlierContext(counts, 3, 0, CFG)) == "c"


def test_policy_spares_a_shared_failure() -> None:
    counts = {"a": WindowCounts(20, 10), "b": WindowCounts(20, 11), "c": WindowCounts(20, 12)}
    assert choose_ejection(OutlierContext(counts, 3, 0, CFG)) is None


def test_policy_needs_the_absolute_threshold_and_min_requests() -> None:
    low = {"a": WindowCounts(20, 0), "b": WindowCounts(20, 0), "c": WindowCounts(20, 4)}  # 20% < 30%
    assert choose_ejection(OutlierContext(low, 3, 0, CFG)) is None
    few = {"a": WindowCounts(20, 0), "b": WindowCounts(20, 0), "c": WindowCounts(9, 9)}
    assert choose_ejection(OutlierContext(few, 3, 0, CFG)) is None


def test_ejection_cap() -> None:
    assert ejection_allowed(3, 0, 34.0)
    assert not ejection_allowed(3, 1, 34.0)
    assert ejection_allowed(2, 0, 34.0)  # the first ejection goes through whatever the share (Envoy)
    assert not ejection_allowed(3, 0, 0.0)  # 0 % turns ejection off
    assert not ejection_allowed(1, 0, 100.0)  # the last replica is never ejected
    assert not ejection_allowed(4, 3, 100.0)
    assert ejection_allowed(10, 2, 30.0)
    assert not ejection_allowed(10, 3, 30.0)
    counts = {"a": WindowCounts(20, 0), "b": WindowCounts(20, 20)}
    assert choose_ejection(OutlierContext(counts, 3, 1, CFG)) is None


def test_ejection_time_grows_with_repeats_and_caps() -> None:
    assert [ejection_duration_s(n, CFG) for n in (1, 2, 3)] == [5.0, 10.0, 12.0]


def test_detector_ejects_then_readmits() -> None:
    clock = FakeClock()
    seen: list[Ejection] = []
    detector = OutlierDetector(["a", "b", "c"], CFG, clock, on_eject=seen.append)
    _feed(detector, "a", 10, 0)
    _feed(detector, "b", 10, 0)
    ejections = _feed(detector, "c", 5, 5)
    assert [e.replica for e in ejections] == ["c"]
    assert seen == ejections
    assert detector.is_ejected("c")
    assert detector.available() == ["a", "b"]
    assert detector.available(["c", "a"]) == ["a"]
    clock.advance(4.9)
    assert detector.is_ejected("c")
    clock.advance(0.1)
    assert not detector.is_ejected("c")
    assert detector.available() == ["a", "b", "c"]


def test_detector_never_ejects_past_the_cap() -> None:
    clock = FakeClock()
    detector = OutlierDetector(["a", "b", "c"], CFG, clock)
    _feed(detector, "a", 20, 0)
    _feed(detector, "b", 5, 15)
    _feed(detector, "c", 5, 15)
    assert detector.ejected().keys() == {"b"}  # the second bad replica would pass 34%


def test_readmitted_replica_starts_fresh_and_second_ejection_is_longer() -> None:
    clock = FakeClock()
    detector = OutlierDetector(["a", "b", "c"], CFG, clock)
    _feed(detector, "a", 10, 0)
    _feed(detector, "b", 10, 0)
    _feed(detector, "c", 0, 10)
    clock.advance(5.0)
    assert detector.record("c", False) is None  # fresh window: 1 outcome < min_requests
    ejections = _feed(detector, "c", 0, 9)
    assert len(ejections) == 1
    assert ejections[0].until - ejections[0].at == 10.0
