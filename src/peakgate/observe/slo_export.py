"""The configured SLOs of each request class, fed one outcome at a time, exported on the service's registry.

What counts (the SRE workbook's user's-eye view, see docs/observability.md):
- availability: a request the service served is good; one it failed (engine or internal error) or refused for
  overload (shed at the door or in its queue, whatever the status, 503 or 429, and batch refused at CACHE_ONLY)
  is bad. Refusals for the caller's own rate limit or quota never reach the guard and count for nothing, nor
  do bad requests or clients gone away.
- latency: a served request is good within its class's `latency_threshold_ms`; failures are availability's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from prometheus_client import Counter, Histogram

from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER
from peakgate.observe.metrics import Metrics
from peakgate.observe.slo import SloReading, SloTracker
from peakgate.observe.slo_settings import SloConfig, SloDefinition

Failure = Literal["shed", "error"]
Outcome = Literal["served", Failure]
_OUTCOMES: tuple[Outcome, ...] = ("served", "shed", "error")


@dataclass(frozen=True, slots=True)
class _Fed:
    """One SLO and its `peakgate_slo_events_total` children, bound once (`labels()` costs more than a lookup)."""

    tracker: SloTracker
    threshold_s: float | None
    good: Counter
    bad: Counter

    def add(self, good: bool) -> None:
        self.tracker.add(good=good)
        (self.good if good else self.bad).inc()


class ClassSlos:
    def __init__(self, config: SloConfig, clock: Clock, metrics: Metrics) -> None:
        self._availability: dict[str, _Fed] = {}
        self._latency: dict[str, _Fed] = {}
        self._all: list[_Fed] = []
        for slo in config.definitions():
            fed = self._fed(slo, clock, config.period_days, metrics)
            (self._availability if slo.kind == "availability" else self._latency)[slo.priority] = fed
            self._all.append(fed)
        # Every child made now: each series exists, at 0, from the first scrape (the ratio rules divide by them).
        self._outcomes: Mapping[tuple[str, Outcome], Counter] = {
            (c, o): metrics.class_requests.labels(c, o) for c in PRIORITY_ORDER for o in _OUTCOMES}
        self._latencies: Mapping[str, Histogram] = {c: metrics.class_latency.labels(c) for c in PRIORITY_ORDER}
        metrics.slo_gauges.attach(self.readings)

    @staticmethod
    def _fed(slo: SloDefinition, clock: Clock, period_days: int, metrics: Metrics) -> _Fed:
        return _Fed(SloTracker(slo.name, slo.objective, clock, period_days), slo.threshold_s,
                    metrics.slo_events.labels(slo.name, "good"), metrics.slo_events.labels(slo.name, "bad"))

    def served(self, priority: str, seconds: float) -> None:
        self._count(priority, "served")
        self._latencies[priority].observe(seconds)
        latency = self._latency.get(priority)
        if latency is not None and latency.threshold_s is not None:
            latency.add(seconds <= latency.threshold_s)

    def failed(self, priority: str, outcome: Failure) -> None:
        """A request refused for overload ("shed") or failed by an engine or a bug ("error")."""
        self._count(priority, outcome)

    def _count(self, priority: str, outcome: Outcome) -> None:
        self._outcomes[priority, outcome].inc()
        availability = self._availability.get(priority)
        if availability is not None:
            availability.add(outcome == "served")

    def readings(self) -> list[SloReading]:
        return [fed.tracker.reading() for fed in self._all]
