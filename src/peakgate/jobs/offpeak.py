"""Off-peak: when deferrable jobs may run (the seed's 低峰时段处理历史积压任务).

`OffPeak` is what the job runner asks before it starts a deferrable job; a job whose latest start has come
runs whatever it says (see `jobs.model.DeferralGate`). Two sources, picked by `jobs.off_peak_source`:

- `"window"` (the default), `WindowOffPeak`: a configured daily window of wall time (e.g. 01:00-06:00 local,
  wrapping midnight when the end is earlier than the start);
- `"forecast"`, `jobs.offpeak_redis.RedisOffPeak`: what `peakgate autoscale` last published from its forecast
  under `offpeak_key(prefix)` as an `OffPeakNotice`, the window when nothing (fresh) is published.

The key and the notice live here, on the request path's side: the autoscaler imports them to write, the
gateways never import the control plane to read.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, time, tzinfo
from typing import Protocol
from zoneinfo import ZoneInfo

import msgspec

from peakgate.errors import BadRequest
from peakgate.jobs.config import JobsConfig


class OffPeak(Protocol):
    async def is_off_peak(self) -> bool: ...

    async def close(self) -> None: ...


class WindowOffPeak:
    """Off-peak from `start` to `end` each day, read on `wall` (Unix seconds) in `tz` (None: local time)."""

    def __init__(self, start: time, end: time, wall: Callable[[], float], tz: tzinfo | None = None) -> None:
        self._start = start
        self._end = end
        self._wall = wall
        self._tz = tz

    async def is_off_peak(self) -> bool:
        now = datetime.fromtimestamp(self._wall(), self._tz).time()
        if self._start <= self._end:
            return self._start <= now < self._end
        return now >= self._start or now < self._end  # the window wraps midnight

    async def close(self) -> None:
        return None


def window_off_peak(config: JobsConfig, wall: Callable[[], float]) -> WindowOffPeak:
    """The configured daily window (`jobs.off_peak_start`-`off_peak_end` in `off_peak_timezone`)."""
    tz = ZoneInfo(config.off_peak_timezone) if config.off_peak_timezone is not None else None
    return WindowOffPeak(config.off_peak_start, config.off_peak_end, wall, tz)


def offpeak_key(stream_prefix: str) -> str:
    """Where the autoscaler publishes its off-peak notice, beside the queue's keys."""
    return f"{stream_prefix}:control:offpeak"


class OffPeakNotice(msgspec.Struct, frozen=True):
    """The autoscaler's word on now: a trough or not, with the figures it decided on (for whoever reads the key).

    Rates are requests per second over the gateways; `expected_per_s` is the highest forecast (upper band) over
    the horizon, `threshold_per_s` the trough fraction of `peak_per_s`, the highest rate seen recently."""

    off_peak: bool
    at_wall_s: float
    expected_per_s: float
    peak_per_s: float
    threshold_per_s: float
    horizon_s: float
    reason: str = ""

    def encode(self) -> bytes:
        return msgspec.json.encode(self)

    @staticmethod
    def decode(raw: bytes | str) -> OffPeakNotice:
        """Fields a newer autoscaler adds are ignored; `BadRequest` when the value is not a notice."""
        try:
            return msgspec.json.decode(raw, type=OffPeakNotice)
        except msgspec.DecodeError as exc:  # ValidationError is a DecodeError
            raise BadRequest(f"unreadable off-peak notice: {exc}") from exc
