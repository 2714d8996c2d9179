"""The overload mechanism the service owns: priority shedding at the door, SLO tracking, the degradation ladder.

The policies (`shedding.decide`, `degrade.decide`) are pure; this object feeds them readings, acts on their
decisions and exports what they decided. The ladder ticks in a background task, never on the request path.

Two SLO views are fed here. Each class's configured SLOs (`observe.slo_export`: availability and latency, with
the SRE workbook's alert windows of minutes to days) see every request the guard admits, sheds or serves. The
ladder reads a burn rate over windows of seconds (`observe.slo.MultiwindowBurn`, the same maths): a page-level
pair resets only once its 5-minute window has cooled, which would hold the ladder degraded for minutes after
a surge it was meant to ride out.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
from collections.abc import Callable, Iterator, Mapping

from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, ClassConfig, PriorityClass
from peakgate.errors import BackendError, PeakgateError, Rejected
from peakgate.observe.metrics import Metrics
from peakgate.observe.slo import MultiwindowBurn
from peakgate.observe.slo_export import ClassSlos, Failure
from peakgate.observe.slo_settings import SloConfig
from peakgate.resilience import shedding
from peakgate.resilience.breaker import Breakers, Transition
from peakgate.resilience.degrade import Degradation, Ladder, Level
from peakgate.resilience.load import LoadTracker
from peakgate.resilience.outlier import Ejection, OutlierDetector
from peakgate.resilience.retry import RetryBudget
from peakgate.resilience.settings import ResilienceConfig

_log = logging.getLogger(__name__)
_STATE_VALUE = {"closed": 0.0, "half_open": 1.0, "open": 2.0}
_QUEUE_SHED_INTERVAL_S = 1.0
# (class, error per queued item, its drain rate or None when starved) -> how many queued segments were failed:
# with a rate, those of the class that cannot make their deadline at it; starved, all of it and below.
QueueShedHook = Callable[[PriorityClass, Callable[[object], PeakgateError], float | None], int]


class OverloadGuard:
    def __init__(
        self, config: ResilienceConfig, classes: Mapping[PriorityClass, ClassConfig], clock: Clock, metrics: Metrics,
        *, shed_queued: QueueShedHook | None = None, slo: SloConfig | None = None,
    ) -> None:
        self._config = config
        self._classes = classes
        self._clock = clock
        self._metrics = metrics
        self.tracker = LoadTracker(clock, wait_half_life_s=config.shedding.wait_half_life_s)
        self.breakers = Breakers(config.breaker, clock, on_transition=self._breaker_moved)
        self.ladder = Ladder(config.ladder, clock, on_change=self._level_moved)
        self.retries = RetryBudget(config.retry, clock)  # fallbacks along a tier are retries: no retry storms
        self._burn = MultiwindowBurn(clock, config.slo_target, (config.slo_window_s, config.slo_short_window_s),
                                     config.slo_min_requests)
        self.slos = ClassSlos(slo or SloConfig(), clock, metrics)
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
        self.slos.failed(priority, "shed")
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
        of you costs ten times a single sentence. The request's outcome and latency count against its class's
        SLOs (a pivoted request passes twice, so counts twice).
        """
        tokens = [self.tracker.enqueued(priority) for _ in range(max(1, segments))]
        started = self._clock.now()
        served = False
        try:
            yield
            served = True
        except Exception as exc:
            failure = _failure(exc)
            if failure is not None:
                self.slos.failed(priority, failure)
            raise
        finally:
            for token in tokens:
                self.tracker.dequeued(priority, token, served=served)
            if served:
                self.tracker.completed(len(tokens), priority)
        self.slos.served(priority, self._clock.now() - started)

    def record(self, *, good: bool) -> None:
        """One request's outcome against the ladder's SLO (answered within its deadline, or not)."""
        self._burn.add(good=good)

    def signals(self) -> tuple[float, float]:
        """(SLO burn rate, interactive queue wait in ms) for the ladder: burn 1.0 spends the budget exactly.

        The burn is the lower of the long and the short window's (SRE multiwindow): both must burn to climb,
        and the short one cooling lets the ladder start down seconds after a surge, not once the long window
        has forgotten it.
        """
        top = self.tracker.load(PRIORITY_ORDER[0], self._classes[PRIORITY_ORDER[0]])
        return self._burn.rate(), max(top.ewma_wait_ms, top.oldest_wait_ms)

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


def _failure(exc: Exception) -> Failure | None:
    """How a request that raised counts against its class's availability: refused for overload (any `Rejected`,
    the ladder's CACHE_ONLY refusals included: the user was turned away), failed by an engine or a bug, or not
    at all (the caller's own error)."""
    if isinstance(exc, Rejected):
        return "shed"
    if isinstance(exc, PeakgateError) and not isinstance(exc, BackendError):
        return None
    return "error"
