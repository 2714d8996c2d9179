"""SLO arithmetic, pure: event windows over an injected Clock, burn rates, the SRE workbook's alert pairs, budgets.

Burn rate = error ratio / (1 - objective): 1.0 spends the error budget exactly over the period. An alert pair
fires when both its long and its short window burn faster than its factor (the long one proves the burn is
big enough to matter, the short one that it is still going on, which bounds the reset time). The pairs are the
workbook's ("Alerting on SLOs", multiwindow multi-burn-rate): 2 % of the budget in 1 h (checked over 5 m too),
5 % in 6 h (30 m) page; 10 % in 3 d (6 h) opens a ticket. For a 30-day period the factors are 14.4, 6 and 1.

The windows live in process memory as bucketed counters (a ring of fixed buckets per resolution: 10 s buckets
up to 1 h, 1 min buckets for 6 h and 3 d, 1 h buckets for the budget period), so memory is bounded whatever the
traffic. A restarted process starts its windows afresh; Prometheus, evaluating the rules generated from the
same config (`peakgate rules`), keeps the durable view.
"""

from __future__ import annotations

from array import array
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from peakgate.clock import Clock

Severity = Literal["page", "ticket"]
# Window name -> (span, bucket) in seconds. The names are the `window` label of `peakgate_slo_burn_rate`.
WINDOWS: Mapping[str, tuple[float, float]] = {
    "5m": (300.0, 10.0),
    "30m": (1_800.0, 10.0),
    "1h": (3_600.0, 10.0),
    "6h": (21_600.0, 60.0),
    "3d": (259_200.0, 60.0),
}
_PERIOD_BUCKET_S = 3_600.0


@dataclass(frozen=True, slots=True)
class AlertPair:
    severity: Severity
    long: str  # a WINDOWS name
    short: str
    budget_percent: int  # of the period's budget that this pair's long window may spend before it fires

    def factor(self, period_s: float) -> float:
        """The burn rate that spends `budget_percent` of a `period_s` budget within the long window."""
        exact = Fraction(self.budget_percent, 100) * Fraction(period_s) / Fraction(WINDOWS[self.long][0])
        return float(exact)  # exact, so the rules print 14.4, not 14.399999999999999


SRE_PAIRS: tuple[AlertPair, ...] = (
    AlertPair("page", "1h", "5m", 2),
    AlertPair("page", "6h", "30m", 5),
    AlertPair("ticket", "3d", "6h", 10),
)
SEVERITIES: tuple[Severity, ...] = ("page", "ticket")


def burn_rate(bad: int, total: int, objective: float) -> float:
    """Error ratio over the error budget (1 - objective); 0 without events."""
    return (bad / total) / (1.0 - objective) if total else 0.0


class RollingCounts:
    """(bad, total) events over several trailing spans of one ring of fixed buckets.

    A span of n buckets covers the current (partial) bucket and the n - 1 before it, so its edge moves one
    bucket at a time. An event touches only its bucket (the request path pays O(1)); a read sums the span's
    buckets (at a scrape or a ladder tick). Memory is the ring, sized by the longest span.
    """

    def __init__(self, bucket_s: float, spans: Mapping[str, int]) -> None:
        if bucket_s <= 0 or not spans or min(spans.values()) < 1:
            raise ValueError("bucket_s must be > 0 and every span at least one bucket")
        self._bucket_s = bucket_s
        self._spans = dict(spans)
        self._size = max(spans.values())
        self._bad = array("q", bytes(8 * self._size))
        self._total = array("q", bytes(8 * self._size))
        self._head: int | None = None  # the newest bucket number; older slots hold the buckets before it

    def add(self, now: float, *, bad: bool, weight: int = 1) -> None:
        slot = self._advance(now) % self._size
        self._total[slot] += weight
        if bad:
            self._bad[slot] += weight

    def counts(self, now: float, span: str) -> tuple[int, int]:
        """(bad, total) over `span` as of `now`."""
        end = self._advance(now) % self._size + 1
        start = end - self._spans[span]
        return self._sum(self._bad, start, end), self._sum(self._total, start, end)

    @staticmethod
    def _sum(values: array[int], start: int, end: int) -> int:
        # A span that wraps round the ring is its tail (a negative start) and its head.
        return sum(values[start:end]) if start >= 0 else sum(values[start:]) + sum(values[:end])

    def _advance(self, now: float) -> int:
        """Clear the slots of the buckets the clock has moved into; the head bucket's number."""
        bucket = int(now // self._bucket_s)
        head = self._head
        if head is None or bucket - head >= self._size:  # idle longer than the ring: every window is empty
            self._bad = array("q", bytes(8 * self._size))
            self._total = array("q", bytes(8 * self._size))
            self._head = bucket
            return bucket
        for step in range(head + 1, bucket + 1):  # nothing while the clock stays in the head bucket
            slot = step % self._size
            self._bad[slot] = self._total[slot] = 0
        self._head = max(head, bucket)
        return self._head


class MultiwindowBurn:
    """The lower of several windows' burn rates (all must burn to count), each window needing `min_events`.

    What the degradation ladder reads: the SLO alerts' maths over windows of seconds, at which the ladder acts.
    """

    def __init__(self, clock: Clock, objective: float, windows_s: Sequence[float], min_events: int,
                 buckets: int = 10) -> None:
        self._clock = clock
        self._objective = objective
        self._min_events = min_events
        self._windows = [RollingCounts(w / buckets, {"w": buckets}) for w in windows_s]

    def add(self, *, good: bool) -> None:
        now = self._clock.now()
        for window in self._windows:
            window.add(now, bad=not good)

    def rate(self) -> float:
        now = self._clock.now()
        rates = []
        for window in self._windows:
            bad, total = window.counts(now, "w")
            rates.append(burn_rate(bad, total, self._objective) if total >= self._min_events else 0.0)
        return min(rates, default=0.0)


@dataclass(frozen=True, slots=True)
class SloReading:
    """One SLO as of one instant: what `peakgate_slo_*` export."""

    name: str
    objective: float
    burn: Mapping[str, float]  # WINDOWS name -> burn rate
    budget_remaining: float  # 1 untouched, 0 spent, negative overspent
    alerts: Mapping[Severity, bool]


class SloTracker:
    """One SLO's good and bad events: burn per window, the alert pairs, the budget left over the period."""

    def __init__(self, name: str, objective: float, clock: Clock, period_days: int) -> None:
        if not 0 < objective < 1:
            raise ValueError("objective must be in (0, 1)")
        self.name = name
        self.objective = objective
        self._clock = clock
        self._period_s = period_days * 86_400.0
        self._started = clock.now()
        self._rings: dict[float, RollingCounts] = {}
        self._ring_of: dict[str, RollingCounts] = {}
        by_bucket: dict[float, dict[str, int]] = {}
        for window, (span_s, bucket_s) in WINDOWS.items():
            by_bucket.setdefault(bucket_s, {})[window] = round(span_s / bucket_s)
        by_bucket.setdefault(_PERIOD_BUCKET_S, {})["period"] = round(self._period_s / _PERIOD_BUCKET_S)
        for bucket_s, spans in by_bucket.items():
            ring = self._rings[bucket_s] = RollingCounts(bucket_s, spans)
            self._ring_of.update(dict.fromkeys(spans, ring))

    def add(self, *, good: bool, weight: int = 1) -> None:
        now = self._clock.now()
        for ring in self._rings.values():
            ring.add(now, bad=not good, weight=weight)

    def burn(self, window: str) -> float:
        bad, total = self._ring_of[window].counts(self._clock.now(), window)
        return burn_rate(bad, total, self.objective)

    def firing(self, pair: AlertPair) -> bool:
        """Both the pair's windows burn faster than its factor."""
        factor = pair.factor(self._period_s)
        return self.burn(pair.long) > factor and self.burn(pair.short) > factor

    def alerts(self) -> dict[Severity, bool]:
        """Per severity: does any of its pairs fire?"""
        return {severity: any(self.firing(p) for p in SRE_PAIRS if p.severity == severity) for severity in SEVERITIES}

    def budget_remaining(self) -> float:
        """1 - the share of the period's error budget spent.

        The budget is (1 - objective) x the period's events. Until the process has seen a whole period, those
        are projected from the rate seen so far: a 14.4x burn for one hour of a 30-day period spends 2 %
        (1 h / 720 h x 14.4), whether the process has been up for that hour or for a month.
        """
        now = self._clock.now()
        bad, total = self._ring_of["period"].counts(now, "period")
        seen_s = min(self._period_s, now - self._started)
        if seen_s <= 0:
            return 1.0
        return 1.0 - burn_rate(bad, total, self.objective) * seen_s / self._period_s

    def reading(self) -> SloReading:
        return SloReading(self.name, self.objective, {w: self.burn(w) for w in WINDOWS}, self.budget_remaining(),
                          self.alerts())
