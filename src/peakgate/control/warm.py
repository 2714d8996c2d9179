"""The warm pool (热备): standby workers with their models loaded, promoted to serving within a fraction of a
second while a scale-up's cold replicas start, and taken back once those serve.

A warm worker is a `peakgate worker --standby` (the local provider's warm processes, or the pods of the warm
Deployment): it beats `ready, standby` and reads nothing until its serve flag is set in Redis (see
`scaleout.worker`). Each tick, `WarmPool.bridge` compares the serving replicas the decision asks for with the
cold (non-warm) workers ready now and flips flags to cover the difference: a scale-up is served at once by
promoted workers, and when the new cold replicas are ready the promoted ones finish what they hold and stand
by again. While some are promoted the provider keeps `target + promoted` warm workers, so the pool refills in
the background and a second burst finds standby workers too. This works the same on both providers: no
process or pod changes role, only a flag.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from peakgate.clock import Clock
from peakgate.control.contract import Forecast, ReplicaEvent, Signals
from peakgate.control.loop_settings import WarmPoolConfig
from peakgate.control.warm_timing import StartupTimer
from peakgate.scaleout.cluster import Heartbeat
from peakgate.scaleout.wall import WallClock

_log = logging.getLogger(__name__)


class WarmProvider(Protocol):
    async def keep_warm(self, replicas: int) -> None:
        """Keep `replicas` warm (standby) workers running: start the missing ones, stop the extra ones."""


class ServeFlags(Protocol):
    async def set_serving(self, worker: str, serving: bool) -> None: ...


def warm_target(config: WarmPoolConfig, forecast: Forecast | None, signals: Signals, startup_s: float) -> int:
    """The pool size: replicas for the forecast's upper band one cold start ahead beyond today's arrivals (at the
    measured capacity per replica), never below the configured size, never above `max_replicas`."""
    capacity = signals.capacity_per_replica_per_s
    if forecast is None or capacity <= 0:
        return min(config.replicas, config.max_replicas)
    extra = max(0.0, forecast.upper_at(startup_s) - signals.request_rate_per_s)
    return min(config.max_replicas, max(config.replicas, math.ceil(extra / capacity)))


@dataclass(frozen=True, slots=True)
class Bridge:
    promoted: int  # warm workers serving, or told to
    events: tuple[ReplicaEvent, ...]


class WarmPool:
    def __init__(self, flags: ServeFlags, timer: StartupTimer, clock: Clock, wall: WallClock) -> None:
        self._flags = flags
        self._timer = timer
        self._clock = clock
        self._wall = wall
        self._flagged: set[str] = set()  # serve flags set by this pool
        self._cleared: set[str] = set()  # serve flags cleared by this pool

    async def bridge(self, desired: int, beats: Sequence[Heartbeat], *, timed: bool) -> Bridge:
        """Promote standby workers for the serving replicas `desired` asks beyond the cold ones ready now; take
        back the promoted ones no longer needed. `timed`: work is waiting, so time each promotion to its first
        request served. Raises `QueueUnreachable` when a flag cannot be written."""
        live = [beat for beat in beats if beat.ready and not beat.draining]
        ids = {beat.worker for beat in live}
        self._flagged &= ids
        self._cleared &= ids
        cold = sum(1 for beat in live if not beat.warm)
        # A flag takes effect at the worker's next poll or heartbeat: until its beat says so, go by the flag.
        promoted = [b.worker for b in live
                    if b.warm and (b.worker in self._flagged or (not b.standby and b.worker not in self._cleared))]
        standby = [b.worker for b in live if b.warm and b.worker not in promoted]
        want = max(0, desired - cold)
        events: list[ReplicaEvent] = []
        for worker in standby[: max(0, want - len(promoted))]:
            await self._flags.set_serving(worker, True)
            self._flagged.add(worker)
            self._cleared.discard(worker)
            if timed:
                self._timer.promoted(worker, self._wall.now())
            events.append(ReplicaEvent(worker, "promoted", self._clock.now(),
                                       f"bridging {want} replica(s) until cold ones serve"))
        for worker in promoted[want:]:
            await self._flags.set_serving(worker, False)
            self._flagged.discard(worker)
            self._cleared.add(worker)
            self._timer.demoted(worker)
            events.append(ReplicaEvent(worker, "demoted", self._clock.now(), "cold replicas serve: standing by"))
        for event in events:
            _log.info("warm pool: %s %s (%s)", event.replica, event.kind, event.detail)
        return Bridge(min(want, len(promoted) + len(standby)), tuple(events))
