"""Wall-clock time, injected like `peakgate.clock.Clock`.

Gateways and workers are different processes (different hosts, even), whose monotonic clocks share no origin:
an absolute deadline travels between them as Unix time, and each side converts it to and from its own
monotonic clock at once. A `FakeClock` started at a plausible epoch serves as a wall clock in tests.
"""

from __future__ import annotations

import time
from typing import Protocol


class WallClock(Protocol):
    def now(self) -> float:
        """Seconds since the Unix epoch."""
        ...


class SystemWallClock:
    def now(self) -> float:
        return time.time()
