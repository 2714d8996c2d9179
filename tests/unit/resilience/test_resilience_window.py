"""Outcome windows: count-based eviction and time-based expiry by slices."""

from __future__ import annotations

import pytest

from peakgate.resilience.window import CountWindow, TimeWindow


def test_count_window_keeps_the_last_n() -> None:
    window = CountWindow(3)
    for failed in (True, True, False, False):
        window.add(0.0, failed)
    counts = window.counts(0.0)
    assert (counts.total, counts.failures) == (3, 1)
    assert counts.failure_rate == pytest.approx(1 / 3)
    window.reset()
    assert window.counts(0.0).total == 0
    assert window.counts(0.0).failure_rate == 0.0


def test_time_window_expires_by_slice() -> None:
    window = TimeWindow(10.0, buckets=10)
    window.add(0.5, True)
    window.add(5.0, False)
    assert window.counts(9.9).total == 2
    assert window.counts(10.0).total == 1  # the slice [0, 1) has left the window
    assert window.counts(15.0).total == 0


def test_windows_reject_bad_sizes() -> None:
    with pytest.raises(ValueError):
        CountWindow(0)
    with pytest.raises(ValueError):
        TimeWindow(0.0)


def test_time_window_running_totals_match_a_recount_through_gaps_and_resets() -> None:
    window = TimeWindow(2.0, buckets=4)
    kept: list[tuple[float, int, bool]] = []
    for step in range(60):
        now = step * 0.37
        failed = step % 3 == 0
        window.add(now, failed, weight=1 + step % 2)
        kept.append((now, 1 + step % 2, failed))
        if step == 40:
            window.reset()
            kept.clear()
        oldest_slice = int(now // 0.5) - 4 + 1
        live = [(w, f) for t, w, f in kept if int(t // 0.5) >= oldest_slice]
        counts = window.counts(now)
        assert (counts.total, counts.failures) == (sum(w for w, _ in live), sum(w for w, f in live if f))
    assert window.counts(1000.0).total == 0  # a long quiet spell empties it
