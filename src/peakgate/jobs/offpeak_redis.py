"""Off-peak from the forecast: what `peakgate autoscale` last published in Redis, read by the gateways' job runners.

The autoscaler writes an `OffPeakNotice` under `offpeak_key(prefix)` every tick, with a TTL of a few ticks, so
a dead autoscaler stops vouching within that. `RedisOffPeak` reads it at most once per `cache_s` (the runner
asks once per job it claims) and answers the notice's word, peak included; the fallback (the configured window)
answers when the key is absent or expired, its value unreadable, or Redis out of reach. After a failure Redis is
left alone for an exponential backoff (the queue's), so an outage costs no connect timeout per claim.
"""

from __future__ import annotations

import logging
import time

import redis.asyncio as aioredis
from redis.exceptions import RedisError

from peakgate.cache.redis_l2 import Backoff
from peakgate.clock import Clock
from peakgate.errors import BadRequest
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.offpeak import OffPeak, OffPeakNotice, offpeak_key, window_off_peak
from peakgate.jobs.store import WallClock
from peakgate.scaleout.redis_streams import redis_client
from peakgate.scaleout.settings import QueueConfig

_log = logging.getLogger(__name__)


class RedisOffPeak:
    def __init__(self, client: aioredis.Redis, key: str, fallback: OffPeak, clock: Clock, *, cache_s: float,
                 backoff: Backoff) -> None:
        self._client = client
        self._key = key
        self._fallback = fallback
        self._clock = clock
        self._cache_s = cache_s
        self._backoff = backoff
        self._answer = False
        self._fresh_until: float | None = None
        self._source = ""  # who decided last: "forecast", else why the window did: "absent", "unreachable"...

    async def is_off_peak(self) -> bool:
        now = self._clock.now()
        if self._fresh_until is None or now >= self._fresh_until:
            self._answer = await self._read()
            self._fresh_until = now + self._cache_s
        return self._answer

    async def close(self) -> None:
        await self._client.aclose()
        await self._fallback.close()

    async def _read(self) -> bool:
        if not self._backoff.ready():
            return await self._fall_back("unreachable", "Redis out of reach")
        try:
            raw = await self._client.get(self._key)
        except (RedisError, OSError) as exc:
            delay = self._backoff.failed()
            return await self._fall_back("unreachable", f"Redis out of reach ({exc}); next try in {delay:.1f}s")
        self._backoff.succeeded()
        if raw is None:
            return await self._fall_back("absent", f"nothing published under {self._key} (or it expired)")
        try:
            notice = OffPeakNotice.decode(raw)
        except BadRequest as exc:
            return await self._fall_back("unreadable", exc.message)
        self._decided_by("forecast", f"the autoscaler's forecast ({notice.reason})")
        return notice.off_peak

    async def _fall_back(self, source: str, why: str) -> bool:
        self._decided_by(source, f"the configured window: {why}")
        return await self._fallback.is_off_peak()

    def _decided_by(self, source: str, detail: str) -> None:
        """Logged when the source changes: an operator sees the forecast take over, or the window return."""
        if source != self._source:
            level = logging.WARNING if source in ("unreachable", "unreadable") else logging.INFO
            _log.log(level, "off-peak for deferrable jobs now decided by %s", detail)
        self._source = source


def build_off_peak(config: JobsConfig, queue: QueueConfig, clock: Clock, wall: WallClock = time.time) -> OffPeak:
    """The off-peak source `config.off_peak_source` names, on the queue's Redis for "forecast"."""
    window = window_off_peak(config, wall)
    if config.off_peak_source == "window":
        return window
    return RedisOffPeak(redis_client(queue), offpeak_key(queue.stream_prefix), window, clock,
                        cache_s=config.off_peak_cache_s,
                        backoff=Backoff(clock, queue.backoff_initial_s, queue.backoff_max_s))
