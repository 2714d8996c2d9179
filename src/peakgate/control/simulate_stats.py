"""What a simulated run measures: queue waits per class and minute, the replica timeline, the cost."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from peakgate.config import PRIORITY_ORDER
from peakgate.control.cost import CostKey, Market

QUEUES = (*PRIORITY_ORDER, "deferrable")  # service order; deferrable: released backlog
WAIT_EDGES_S = np.concatenate(([0.0], np.geomspace(0.001, 86_400.0, 400)))
Vector = npt.NDArray[np.float64]


class WaitStats:
    """Per queue: arrivals and on-time services per arrival minute, and a histogram of every wait."""

    def __init__(self, minutes: int) -> None:
        self.arrived = np.zeros((len(QUEUES), minutes))
        self.on_time = np.zeros((len(QUEUES), minutes))
        self.hist = np.zeros((len(QUEUES), WAIT_EDGES_S.size + 1))

    def arrive(self, queue: int, at_s: float, count: float) -> None:
        self.arrived[queue, int(at_s // 60)] += count

    def served(self, queue: int, arrival_s: float, wait_s: float, count: float, on_time: bool) -> None:
        self.hist[queue, int(np.searchsorted(WAIT_EDGES_S, wait_s, side="right"))] += count
        if on_time:
            self.on_time[queue, int(arrival_s // 60)] += count

    def minute_attainment(self, queue: int, quantile: float) -> float:
        """The share of minutes (with arrivals) in which at least `quantile` of the arrivals were on time."""
        arrived = self.arrived[queue]
        busy = arrived > 0
        if not busy.any():
            return 1.0
        met = self.on_time[queue][busy] >= quantile * arrived[busy] - 1e-9
        return float(met.mean())

    def on_time_share(self, queue: int) -> float:
        arrived = float(self.arrived[queue].sum())
        return float(self.on_time[queue].sum()) / arrived if arrived > 0 else 1.0

    def failing_minutes(self, queue: int, quantile: float) -> int:
        arrived = self.arrived[queue]
        return int(((arrived > 0) & (self.on_time[queue] < quantile * arrived - 1e-9)).sum())

    def quantile_wait_s(self, queue: int, quantile: float) -> float:
        """The wait `quantile` of the queue's work stayed within (a bin's upper edge; inf past the last)."""
        counts = self.hist[queue]
        total = counts.sum()
        if total <= 0:
            return 0.0
        index = int(np.searchsorted(np.cumsum(counts), quantile * total))
        return float(WAIT_EDGES_S[index]) if index < WAIT_EDGES_S.size else float("inf")


@dataclass(slots=True)
class Timeline:
    """One row per simulated minute (sampled at its end)."""

    desired: list[int] = field(default_factory=list)
    serving: list[int] = field(default_factory=list)
    on_demand: list[int] = field(default_factory=list)  # billed instances, warm and draining included
    spot: list[int] = field(default_factory=list)
    arrivals_per_s: list[float] = field(default_factory=list)
    capacity_per_s: list[float] = field(default_factory=list)
    forecast_upper_per_s: list[float] = field(default_factory=list)  # nan when no forecast was made


@dataclass(frozen=True, slots=True)
class RunResult:
    name: str
    minutes: int
    waits: WaitStats
    timeline: Timeline
    cost: dict[Market, float]  # spent
    cost_all_on_demand: float  # the same instance-seconds, every one on on-demand
    attributed: dict[tuple[CostKey, Market], float]
    decisions: int  # decisions that changed the desired replicas
    interruptions: int
    carried: float  # segments queued at the end with their bound still ahead (left out of the statistics)
