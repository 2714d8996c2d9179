"""Injected time: library code asks a Clock, tests drive a FakeClock."""

from __future__ import annotations

import asyncio
import heapq
import time
from collections.abc import Callable
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


class Clock(Protocol):
    """Monotonic seconds, an awaitable sleep, and a callback at a clock time (no task per timeout)."""

    def now(self) -> float: ...

    async def sleep(self, seconds: float) -> None: ...

    def call_at(self, when: float, callback: Callable[[], object]) -> Timer: ...


class MonotonicClock:
    """The real clock: `time.monotonic`, `asyncio.sleep` and the running loop's timers."""

    def now(self) -> float:
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(max(0.0, seconds))

    def call_at(self, when: float, callback: Callable[[], object]) -> Timer:
        # Relative to our clock, not loop.time(): the two monotonic clocks need not share an origin.
        return asyncio.get_running_loop().call_later(max(0.0, when - time.monotonic()), callback)


class _FakeTimer:
    __slots__ = ("callback", "cancelled")

    def __init__(self, callback: Callable[[], object]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """A clock that only moves when a test calls `advance`.

    Timers (and the sleepers parked on them) fire in deadline order when time passes them.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._now = start
        self._timers: list[tuple[float, int, _FakeTimer]] = []
        self._seq = 0

    def now(self) -> float:
        return self._now

    async def sleep(self, seconds: float) -> None:
        if seconds <= 0:
            await asyncio.sleep(0)
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        def wake() -> None:
            if not fut.done():
                fut.set_result(None)

        timer = self.call_at(self._now + seconds, wake)
        try:
            await fut
        finally:
            timer.cancel()

    def call_at(self, when: float, callback: Callable[[], object]) -> Timer:
        timer = _FakeTimer(callback)
        self._seq += 1
        heapq.heappush(self._timers, (when, self._seq, timer))
        return timer

    def advance(self, seconds: float) -> None:
        """Move time forward and fire every timer whose deadline has passed."""
        self._now += seconds
        while self._timers and self._timers[0][0] <= self._now:
            _, _, timer = heapq.heappop(self._timers)
            if not timer.cancelled:
                timer.cancelled = True
                timer.callback()

    @property
    def sleepers(self) -> int:
        """Timers still to fire (a parked sleeper is one)."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)
