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
    Running totals make `counts` O(expired slices): admission asks for them on every request.
    """

    def __init__(self, window_s: float, buckets: int = 10) -> None:
        if window_s <= 0 or buckets < 1:
            raise ValueError("window_s must be > 0 and buckets >= 1")
        self._slice_s = window_s / buckets
        self._span = round(window_s / self._slice_s)  # slices in the window
        self._slices: deque[list[int]] = deque()  # [slice index, total, failures]
        self._total = 0
        self._failures = 0

    def add(self, now: float, failed: bool, weight: int = 1) -> None:
        index = int(now // self._slice_s)
        self._expire(index)
        if not self._slices or self._slices[-1][0] != index:
            self._slices.append([index, 0, 0])
        last = self._slices[-1]
        last[1] += weight
        self._total += weight
        if failed:
            last[2] += weight
            self._failures += weight

    def counts(self, now: float) -> WindowCounts:
        self._expire(int(now // self._slice_s))
        return WindowCounts(total=self._total, failures=self._failures)

    def reset(self) -> None:
        self._slices.clear()
        self._total = self._failures = 0

    def _expire(self, index: int) -> None:
        oldest = index - self._span + 1
        slices = self._slices
        while slices and slices[0][0] < oldest:
            _, total, failures = slices.popleft()
            self._total -= total
            self._failures -= failures
