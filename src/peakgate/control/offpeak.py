"""Off-peak: when deferrable jobs may run (the seed's 低峰时段处理历史积压任务).

`OffPeak` is what the job runner asks before it starts a deferrable job; a job whose latest start has come
runs whatever it says (see `jobs.model.DeferralGate`). The default, `WindowOffPeak`, is a configured daily
window of wall time (e.g. 01:00-06:00 local, wrapping midnight when the end is earlier than the start).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, time, tzinfo
from typing import Protocol


class OffPeak(Protocol):
    def is_off_peak(self) -> bool: ...


class WindowOffPeak:
    """Off-peak from `start` to `end` each day, read on `wall` (Unix seconds) in `tz` (None: local time)."""

    def __init__(self, start: time, end: time, wall: Callable[[], float], tz: tzinfo | None = None) -> None:
        self._start = start
        self._end = end
        self._wall = wall
        self._tz = tz

    def is_off_peak(self) -> bool:
        now = datetime.fromtimestamp(self._wall(), self._tz).time()
        if self._start <= self._end:
            return self._start <= now < self._end
        return now >= self._start or now < self._end  # the window wraps midnight
