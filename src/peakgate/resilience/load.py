"""Per-class queue statistics for the shedding policy, fed by queue events and read at admission.

The scheduler reports enqueue / dequeue / completion; admission asks `context(...)` for a `ShedContext`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from itertools import count

from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, ClassConfig, PriorityClass
from peakgate.resilience.settings import SheddingConfig
from peakgate.resilience.shedding import ClassLoad, ShedContext
from peakgate.resilience.window import TimeWindow


class LoadTracker:
    """Depth, oldest wait, EWMA wait, arrival and completion rates per class, plus the total completion rate
    over `drain_window_s`.

    The EWMA wait halves every `wait_half_life_s` without a new sample: it is only fed when a request is
    served, so once a surge sheds everything a frozen average would go on shedding everything for good.
    """

    def __init__(self, clock: Clock, *, wait_alpha: float = 0.2, drain_window_s: float = 10.0,
                 wait_half_life_s: float = 2.0) -> None:
        if not 0 < wait_alpha <= 1:
            raise ValueError("wait_alpha must be in (0, 1]")
        if wait_half_life_s <= 0:
            raise ValueError("wait_half_life_s must be > 0")
        self._clock = clock
        self._alpha = wait_alpha
        self._half_life_s = wait_half_life_s
        self._drain_window_s = drain_window_s
        self._completions = TimeWindow(drain_window_s)
        self._arrivals = {c: TimeWindow(drain_window_s) for c in PRIORITY_ORDER}
        self._done = {c: TimeWindow(drain_window_s) for c in PRIORITY_ORDER}
        self._queued: dict[PriorityClass, dict[int, float]] = {c: {} for c in PRIORITY_ORDER}
        self._ewma_ms: dict[PriorityClass, float] = dict.fromkeys(PRIORITY_ORDER, 0.0)
        self._ewma_at: dict[PriorityClass, float] = dict.fromkeys(PRIORITY_ORDER, clock.now())
        self._tokens = count()

    def enqueued(self, cls: PriorityClass) -> int:
        """Record a queued request; returns the token to pass to `dequeued`."""
        token = next(self._tokens)
        now = self._clock.now()
        self._queued[cls][token] = now
        self._arrivals[cls].add(now, failed=False)
        return token

    def dequeued(self, cls: PriorityClass, token: int, *, served: bool = True) -> None:
        """The request left the queue; `served=False` (expired, cancelled) keeps it out of the wait average."""
        enqueued_at = self._queued[cls].pop(token, None)
        if enqueued_at is None or not served:
            return
        now = self._clock.now()
        wait_ms = (now - enqueued_at) * 1000.0
        ewma = self.ewma_wait_ms(cls)
        self._ewma_ms[cls] = ewma + self._alpha * (wait_ms - ewma)
        self._ewma_at[cls] = now

    def ewma_wait_ms(self, cls: PriorityClass) -> float:
        """The smoothed wait, decayed by the time since its last sample."""
        age_s = self._clock.now() - self._ewma_at[cls]
        return self._ewma_ms[cls] * math.exp2(-max(0.0, age_s) / self._half_life_s)

    def completed(self, requests: int = 1, cls: PriorityClass | None = None) -> None:
        now = self._clock.now()
        self._completions.add(now, failed=False, weight=requests)
        if cls is not None:
            self._done[cls].add(now, failed=False, weight=requests)

    def drain_per_s(self) -> float:
        return self._completions.counts(self._clock.now()).total / self._drain_window_s

    def load(self, cls: PriorityClass, sla: ClassConfig) -> ClassLoad:
        queued = self._queued[cls]
        # Tokens are enqueued in time order and dicts keep insertion order: the first value is the oldest, O(1).
        oldest = (self._clock.now() - next(iter(queued.values()))) * 1000.0 if queued else 0.0
        now = self._clock.now()
        arrivals = self._arrivals[cls].counts(now).total / self._drain_window_s
        done = self._done[cls].counts(now).total / self._drain_window_s
        return ClassLoad(len(queued), oldest, self.ewma_wait_ms(cls), sla.max_queue_wait_ms, sla.deadline_ms,
                         arrivals, done)

    def context(
        self,
        request_class: PriorityClass,
        service_time_ms: float,
        classes: Mapping[PriorityClass, ClassConfig],
        config: SheddingConfig,
        *,
        client_share: float = 0.0,
        min_drain_per_s: float = 0.0,
        deadline_ms: float | None = None,
    ) -> ShedContext:
        """`min_drain_per_s`: a floor from the engines' measured capacity (completions also count arrivals);
        `deadline_ms`: the request's own deadline, when it set one."""
        loads = {cls: self.load(cls, sla) for cls, sla in classes.items()}
        drain = max(self.drain_per_s(), min_drain_per_s)
        return ShedContext(request_class, service_time_ms, loads, drain, config, client_share, deadline_ms)
