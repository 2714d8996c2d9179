"""Outlier ejection over the replicas of one model: take out the one replica whose errors stand out.

`choose_ejection` is the pure policy; `OutlierDetector` keeps per-replica windows and ejection times.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from peakgate.clock import Clock
from peakgate.resilience.settings import OutlierConfig
from peakgate.resilience.window import TimeWindow, WindowCounts


@dataclass(frozen=True, slots=True)
class OutlierContext:
    counts: Mapping[str, WindowCounts]  # every replica that is currently in service
    total_replicas: int  # in service plus ejected
    ejected: int
    config: OutlierConfig


def ejection_allowed(total: int, ejected: int, max_percent: float) -> bool:
    """Whether one more ejection keeps the ejected share at or under `max_percent`.

    As in Envoy, the first ejection is allowed whatever the share (one bad pipeline of two must be able to go),
    but one replica always stays in service; 0 % turns ejection off.
    """
    if max_percent <= 0 or ejected + 1 >= total:
        return False
    return ejected == 0 or (ejected + 1) * 100 <= max_percent * total


def choose_ejection(ctx: OutlierContext) -> str | None:
    """The replica to eject now, or None.

    The candidate is the replica with the highest error rate among those with `min_requests` outcomes; it must
    reach the absolute threshold and `median_factor` times the median of the other eligible replicas (so a
    shared failure, e.g. a bad upstream, ejects nobody).
    """
    cfg = ctx.config
    if not ejection_allowed(ctx.total_replicas, ctx.ejected, cfg.max_ejection_percent):
        return None
    rates = {name: c.failure_rate for name, c in ctx.counts.items() if c.total >= cfg.min_requests}
    if len(rates) < 2:
        return None  # no peers to compare with
    worst = max(sorted(rates), key=lambda name: rates[name])
    others = [rate for name, rate in rates.items() if name != worst]
    median = statistics.median(others)
    rate = rates[worst]
    if rate >= cfg.error_rate_threshold and rate >= cfg.median_factor * median and rate > median:
        return worst
    return None


def ejection_duration_s(times_ejected: int, config: OutlierConfig) -> float:
    """Envoy's rule: base time multiplied by how often this replica has been ejected, capped."""
    return min(config.max_ejection_s, config.ejection_s * max(1, times_ejected))


@dataclass(frozen=True, slots=True)
class Ejection:
    replica: str
    at: float
    until: float


class OutlierDetector:
    """Tracks outcomes per replica; ejects at most one replica per `record` and re-admits when its time is up."""

    def __init__(
        self,
        replicas: Iterable[str],
        config: OutlierConfig,
        clock: Clock,
        *,
        on_eject: Callable[[Ejection], None] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._on_eject = on_eject
        self._windows = {name: TimeWindow(config.window_s) for name in replicas}
        self._ejected_until: dict[str, float] = {}
        self._times_ejected: dict[str, int] = {}

    @property
    def replicas(self) -> tuple[str, ...]:
        return tuple(self._windows)

    def record(self, replica: str, ok: bool) -> Ejection | None:
        """Count one outcome for `replica`, then re-evaluate; returns the ejection it caused, if any."""
        self._readmit()
        self._windows[replica].add(self._clock.now(), failed=not ok)
        return self._evaluate()

    def is_ejected(self, replica: str) -> bool:
        self._readmit()
        return replica in self._ejected_until

    def available(self, replicas: Iterable[str] | None = None) -> list[str]:
        """The given replicas (default: all) that are not ejected, in order."""
        self._readmit()
        names = self._windows if replicas is None else replicas
        return [name for name in names if name not in self._ejected_until]

    def ejected(self) -> dict[str, float]:
        self._readmit()
        return dict(self._ejected_until)

    def _evaluate(self) -> Ejection | None:
        now = self._clock.now()
        ctx = OutlierContext(
            counts={n: w.counts(now) for n, w in self._windows.items() if n not in self._ejected_until},
            total_replicas=len(self._windows),
            ejected=len(self._ejected_until),
            config=self._config,
        )
        victim = choose_ejection(ctx)
        if victim is None:
            return None
        times = self._times_ejected.get(victim, 0) + 1
        self._times_ejected[victim] = times
        ejection = Ejection(victim, now, now + ejection_duration_s(times, self._config))
        self._ejected_until[victim] = ejection.until
        if self._on_eject is not None:
            self._on_eject(ejection)
        return ejection

    def _readmit(self) -> None:
        now = self._clock.now()
        for name, until in list(self._ejected_until.items()):
            if now >= until:
                del self._ejected_until[name]
                # Judge a re-admitted replica on fresh outcomes, not on the ones that ejected it.
                self._windows[name].reset()
