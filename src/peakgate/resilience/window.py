"""Sliding outcome windows shared by the breaker, outlier detector and retry budget.

Both windows answer `counts(now) -> (total, failures)`; `now` comes from the caller's Clock so that the
windows themselves stay free of time sources.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class WindowCounts:
    total: int
    failures: int

    @property
    def failure_rate(self) -> float:
        return self.failures / self.total if self.total else 0.0


class OutcomeWindow(Protocol):
    def add(self, now: float, failed: bool) -> None: ...

    def counts(self, now: float) -> WindowCounts: ...

    def reset(self) -> None: ...


class CountWindow:
    """The last `size` outcomes, whatever their age."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self._outcomes: deque[bool] = deque(maxlen=size)
        self._failures = 0

    def add(self, now: float, failed: bool) -> None:
        maxlen = self._outcomes.maxlen
        if maxlen is not None and len(self._outcomes) == maxlen and self._outcomes[0]:
            self._failures -= 1
        self._outcomes.append(failed)
        self._failures += failed

    def counts(self, now: float) -> WindowCounts:
        return WindowCounts(total=len(self._outcomes), failures=self._failures)

    def reset(self) -> None:
        self._outcomes.clear()
        self._failures = 0


class TimeWindow:
    """Outcomes of the last `window_s` seconds, in `buckets` fixed slices.

    Bucketing bounds memory under heavy traffic; the price is that the window's edge moves one slice at a time.
    """

    def __init__(self, window_s: float, buckets: int = 10) -> None:
        if window_s <= 0 or buckets < 1:
            raise ValueError("window_s must be > 0 and buckets >= 1")
        self._window_s = window_s
        self._slice_s = window_s / buckets
        self._slices: deque[list[int]] = deque()  # [slice index, total, failures]

    def add(self, now: float, failed: bool, weight: int = 1) -> None:
        self._expire(now)
        index = int(now // self._slice_s)
        if not self._slices or self._slices[-1][0] != index:
            self._slices.append([index, 0, 0])
        self._slices[-1][1] += weight
        self._slices[-1][2] += weight if failed else 0

    def counts(self, now: float) -> WindowCounts:
        self._expire(now)
        return WindowCounts(total=sum(s[1] for s in self._slices), failures=sum(s[2] for s in self._slices))

    def reset(self) -> None:
        self._slices.clear()

    def _expire(self, now: float) -> None:
        oldest = int(now // self._slice_s) - round(self._window_s / self._slice_s) + 1
        while self._slices and self._slices[0][0] < oldest:
            self._slices.popleft()
