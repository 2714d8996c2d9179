"""The overload mechanism the service owns: priority shedding at the door, SLO tracking, the degradation ladder.

The policies (`shedding.decide`, `degrade.decide`) are pure; this object feeds them readings, acts on their
decisions and exports what they decided. The ladder ticks in a background task, never on the request path.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Iterator, Mapping

from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, ClassConfig, PriorityClass
from peakgate.errors import PeakgateError
from peakgate.observe.metrics import Metrics
from peakgate.resilience import shedding
from peakgate.resilience.breaker import Breakers, Transition
from peakgate.resilience.degrade import Degradation, Ladder, Level
from peakgate.resilience.load import LoadTracker
from peakgate.resilience.outlier import Ejection, OutlierDetector
from peakgate.resilience.retry import RetryBudget
from peakgate.resilience.settings import ResilienceConfig
from peakgate.resilience.window import TimeWindow

_log = logging.getLogger(__name__)
_STATE_VALUE = {"closed": 0.0, "half_open": 1.0, "open": 2.0}
_QUEUE_SHED_INTERVAL_S = 1.0
# (class, error per queued item, its drain rate or None when starved) -> how many queued segments were failed:
# with a rate, those of the class that cannot make their deadline at it; starved, all of it and below.
QueueShedHook = Callable[[PriorityClass, Callable[[object], PeakgateError], float | None], int]


class OverloadGuard:
    def __init__(
        self, config: ResilienceConfig, classes: Mapping[PriorityClass, ClassConfig], clock: Clock, metrics: Metrics,
        *, shed_queued: QueueShedHook | None = None,
    ) -> None:
        self._config = config
        self._classes = classes
        self._clock = clock
        self._metrics = metrics
        self.tracker = LoadTracker(clock, wait_half_life_s=config.shedding.wait_half_life_s)
        self.breakers = Breakers(config.breaker, clock, on_transition=self._breaker_moved)
        self.ladder = Ladder(config.ladder, clock, on_change=self._level_moved)
        self.retries = RetryBudget(config.retry, clock)  # fallbacks along a tier are retries: no retry storms
        self._slo = TimeWindow(config.slo_window_s)
        self._slo_short = TimeWindow(config.slo_short_window_s)
        self._task: asyncio.Task[None] | None = None
        self._shed_queued = shed_queued
        self._queue_shed_at: dict[PriorityClass, float] = {}
        self._refused_since: dict[PriorityClass, float] = {}  # start of each class's current run of refusals

    @property
    def degradation(self) -> Degradation:
        return self.ladder.degradation

    def admit(self, priority: PriorityClass, service_time_ms: float, capacity_per_s: float,
              deadline_ms: float | None = None) -> None:
        """Raise the shed decision's `RateLimited`/`Overloaded` (with Retry-After) when this class must wait out.

        `capacity_per_s` is the serving model's measured rate while busy: the tracker's own completion rate
        counts arrivals too, so after a quiet spell it would read a fast engine as a slow one and shed a burst.
        """
        ctx = self.tracker.context(priority, service_time_ms, self._classes, self._config.shedding,
                                   min_drain_per_s=capacity_per_s, deadline_ms=deadline_ms)
        decision = shedding.decide(ctx)
        if not decision.shed or (decision.stale and self._probe(priority)):
            self._refused_since.pop(priority, None)
            return
        self._metrics.rejected.labels("shed", priority).inc()
        self.record(good=False)
        if decision.starved or decision.late_drain_per_s is not None:
            self._shed_behind(priority, decision)
        raise decision.error()

    def _probe(self, priority: PriorityClass) -> bool:
        """A class refused for a whole `probe_interval_s` on past waits alone (nothing queued) lets one request
        through (a breaker's half-open), so its numbers are measured again rather than predicted from what a
        surge left behind. Never while work is queued: under real overload a probe is only more load."""
        now = self._clock.now()
        since = self._refused_since.setdefault(priority, now)
        if now - since < self._config.shedding.probe_interval_s:
            return False
        self._metrics.shed_probes.labels(priority).inc()
        return True

    def _shed_behind(self, priority: PriorityClass, decision: shedding.ShedDecision) -> None:
        """Work of the class admitted before it fell behind would wait out its deadline: fail it now, at most
        once per `_QUEUE_SHED_INTERVAL_S` per class (each call scans the queues)."""
        now = self._clock.now()
        if self._shed_queued is None or now - self._queue_shed_at.get(priority, -math.inf) < _QUEUE_SHED_INTERVAL_S:
            return
        self._queue_shed_at[priority] = now
        rate = None if decision.starved else decision.late_drain_per_s
        shed = self._shed_queued(priority, lambda _item: decision.error(), rate)
        if shed:
            why = "starved by more critical arrivals" if rate is None else f"draining at {rate:.1f}/s"
            _log.warning("%s work %s: %d queued segments that would miss their deadline shed with Retry-After",
                         priority, why, shed)

    @contextlib.contextmanager
    def queued(self, priority: PriorityClass, segments: int) -> Iterator[None]:
        """Count a request's segments as waiting in its class while the engines work on them.

        Segments, not requests: capacity is measured in segments per second, and a 10-sentence document ahead
        of you costs ten times a single sentence.
        """
        tokens = [self.tracker.enqueued(priority) for _ in range(max(1, segments))]
        served = False
        try:
            yield
            served = True
        finally:
            for token in tokens:
                self.tracker.dequeued(priority, token, served=served)
            if served:
                self.tracker.completed(len(tokens), priority)

    def record(self, *, good: bool) -> None:
        """One request's outcome against the SLO (answered within its deadline, or not)."""
        now = self._clock.now()
        self._slo.add(now, failed=not good)
        self._slo_short.add(now, failed=not good)

    def signals(self) -> tuple[float, float]:
        """(SLO burn rate, interactive queue wait in ms) for the ladder: burn 1.0 spends the budget exactly.

        The burn is the lower of the long and the short window's (SRE multiwindow): both must burn to climb,
        and the short one cooling lets the ladder start down seconds after a surge, not once the long window
        has forgotten it.
        """
        burn = min(self._burn(self._slo), self._burn(self._slo_short))
        top = self.tracker.load(PRIORITY_ORDER[0], self._classes[PRIORITY_ORDER[0]])
        return burn, max(top.ewma_wait_ms, top.oldest_wait_ms)

    def _burn(self, window: TimeWindow) -> float:
        counts = window.counts(self._clock.now())
        budget = max(1e-9, 1.0 - self._config.slo_target)
        return counts.failure_rate / budget if counts.total >= self._config.slo_min_requests else 0.0

    def interactive_late_ms(self) -> float | None:
        """The interactive class's observed wait when it has reached that class's deadline (nothing more
        critical can be served in time: readiness says so), else None."""
        top = PRIORITY_ORDER[0]
        wait_ms = self.signals()[1]
        return wait_ms if wait_ms >= self._classes[top].deadline_ms else None

    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self.ladder.run(self.signals), name="peakgate-degradation-ladder")

    async def close(self) -> None:
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    def outlier_detector(self, model: str, replicas: int) -> OutlierDetector:
        """Outlier ejection over one model's replicas, counted in `peakgate_outlier_ejections_total`."""

        def ejected(ejection: Ejection) -> None:
            self._metrics.ejections.labels(model, ejection.replica).inc()
            _log.warning("model %s: replica %s ejected for %.0f s (errors stand out from its peers)",
                         model, ejection.replica, ejection.until - ejection.at)

        return OutlierDetector([str(i) for i in range(replicas)], self._config.outlier, self._clock, on_eject=ejected)

    def _breaker_moved(self, moved: Transition) -> None:
        self._metrics.breaker_state.labels(moved.name).set(_STATE_VALUE.get(str(moved.new), 0.0))
        self._metrics.breaker_transitions.labels(moved.name, str(moved.new)).inc()

    def _level_moved(self, _old: Level, new: Level) -> None:
        self._metrics.degradation_level.set(int(new))
