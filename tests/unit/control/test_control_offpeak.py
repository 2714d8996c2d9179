"""The off-peak window: wall time of day in a time zone, wrapping midnight when it ends earlier than it starts."""

from __future__ import annotations

from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

import pytest

from peakgate.control.offpeak import WindowOffPeak


def _at(hour: int, minute: int = 0) -> float:
    return datetime(2026, 12, 6, hour, minute, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("hour", "minute", "off_peak"), [
    (0, 59, False), (1, 0, True), (3, 30, True), (5, 59, True), (6, 0, False), (14, 0, False)])
def test_a_daytime_window(hour: int, minute: int, off_peak: bool) -> None:
    window = WindowOffPeak(time(1, 0), time(6, 0), lambda: _at(hour, minute), UTC)
    assert window.is_off_peak() is off_peak


@pytest.mark.parametrize(("hour", "off_peak"), [(21, False), (22, True), (23, True), (0, True), (5, True),
                                                (6, False)])
def test_a_window_across_midnight(hour: int, off_peak: bool) -> None:
    assert WindowOffPeak(time(22, 0), time(6, 0), lambda: _at(hour), UTC).is_off_peak() is off_peak


def test_the_window_is_read_in_its_time_zone() -> None:
    shanghai = ZoneInfo("Asia/Shanghai")  # UTC+8: 18:00 UTC is 02:00 there
    assert WindowOffPeak(time(1, 0), time(6, 0), lambda: _at(18), shanghai).is_off_peak()
    assert not WindowOffPeak(time(1, 0), time(6, 0), lambda: _at(18), UTC).is_off_peak()
