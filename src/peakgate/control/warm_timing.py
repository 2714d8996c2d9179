"""Decision to first request served, per replica, from the workers' heartbeats, in wall time (workers may run
on other machines; their monotonic clocks share no origin with ours). Only decisions taken while work was
waiting are timed: without work a replica's first request says nothing about how fast it started.

- a cold start: a scale-up decision to the first entry served by a worker new since then (decisions are
  matched first come, first served; a scale-in forgets the ones no worker answered yet);
- a warm promotion: a standby worker's serve flag set to the first entry it served after.

The latest cold start is what a policy's `startup_s` reads (a prior until the first is measured).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence
from typing import Literal

from peakgate.scaleout.cluster import Heartbeat

StartKind = Literal["cold", "warm"]


class StartupTimer:
    def __init__(self, prior_s: float, observe: Callable[[StartKind, float], None]) -> None:
        self.cold_s = prior_s
        self._observe = observe
        self._known: set[str] | None = None  # None until the first look: those workers predate any decision
        self._decisions: deque[float] = deque()
        self._pending: dict[StartKind, dict[str, float]] = {"cold": {}, "warm": {}}

    def scaled_up(self, replicas: int, at_wall_s: float) -> None:
        self._decisions.extend([at_wall_s] * replicas)

    def scaled_down(self) -> None:
        self._decisions.clear()

    def promoted(self, worker: str, at_wall_s: float) -> None:
        self._pending["warm"][worker] = at_wall_s

    def demoted(self, worker: str) -> None:
        self._pending["warm"].pop(worker, None)

    def observe(self, beats: Sequence[Heartbeat]) -> None:
        """Match new workers to open decisions, and time every pending replica that has served since."""
        live = {beat.worker for beat in beats}
        if self._known is None:
            self._known = live
            return
        for beat in beats:
            if beat.worker not in self._known and not beat.warm and self._decisions:
                self._pending["cold"][beat.worker] = self._decisions.popleft()
            for kind in ("cold", "warm"):
                self._measure(kind, beat)
        self._known = live
        for pending in self._pending.values():
            for gone in set(pending) - live:
                del pending[gone]

    def _measure(self, kind: StartKind, beat: Heartbeat) -> None:
        decided = self._pending[kind].get(beat.worker)
        served = beat.first_served_wall_s
        # A beat published before the promotion took effect still carries the previous stint's first entry.
        if decided is None or beat.standby or served is None or served < decided:
            return
        del self._pending[kind][beat.worker]
        seconds = served - decided
        if kind == "cold":
            self.cold_s = seconds
        self._observe(kind, seconds)
