"""Publishes the trough decision for the gateways' job runners: a `TickObserver` of the control loop.

Each tick with a forecast it decides (`trough.decide`) and writes the `OffPeakNotice` under
`{stream_prefix}:control:offpeak` with a TTL of `ttl_ticks` ticks: a stopped or stuck autoscaler stops vouching
within that, and the gateways (`jobs.offpeak_redis.RedisOffPeak`) fall back to their configured window. A Redis
failure is the loop's to report (`peakgate_autoscale_errors_total{stage="offpeak"}`); the next tick writes again.
"""

from __future__ import annotations

import logging
from typing import Protocol

from peakgate.control.contract import Tick
from peakgate.control.trough import TroughConfig, TroughState, decide
from peakgate.jobs.offpeak import OffPeakNotice
from peakgate.scaleout.wall import WallClock

_log = logging.getLogger(__name__)


class ExpiringWriter(Protocol):
    async def set_expiring(self, key: str, value: bytes, ttl_s: float) -> None: ...


class TroughPublisher:
    stage = "offpeak"

    def __init__(self, config: TroughConfig, store: ExpiringWriter, key: str, tick_s: float, wall: WallClock
                 ) -> None:
        self._config = config
        self._store = store
        self._key = key
        self._ttl_s = config.ttl_ticks * tick_s
        self._wall = wall
        self._state = TroughState()
        self._off_peak: bool | None = None  # the last word published, to log its changes

    async def observe(self, tick: Tick) -> None:
        if tick.forecast is None:
            return
        decision, self._state = decide(self._config, tick.signals, tick.forecast, self._state)
        if decision.off_peak is not self._off_peak:
            _log.info("off-peak: %s (%s)", "a forecast trough" if decision.off_peak else "not a trough",
                      decision.reason)
            self._off_peak = decision.off_peak
        notice = OffPeakNotice(off_peak=decision.off_peak, at_wall_s=self._wall.now(),
                               expected_per_s=decision.expected_per_s, peak_per_s=decision.peak_per_s,
                               threshold_per_s=decision.threshold_per_s, horizon_s=self._config.horizon_s,
                               reason=decision.reason)
        await self._store.set_expiring(self._key, notice.encode(), self._ttl_s)
