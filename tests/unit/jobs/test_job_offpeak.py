"""Off-peak sources: the window (wall time of day in a time zone, wrapping midnight when it ends earlier than it
starts); the autoscaler's notice and its key; `RedisOffPeak` on a fake client (cached, the window when nothing is
published or Redis fails, then left alone for a backoff); the source each config builds."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from zoneinfo import ZoneInfo

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from peakgate.cache.redis_l2 import Backoff
from peakgate.clock import FakeClock
from peakgate.config import Settings
from peakgate.errors import BadRequest
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.offpeak import OffPeakNotice, WindowOffPeak, offpeak_key
from peakgate.jobs.offpeak_redis import RedisOffPeak, build_off_peak
from peakgate.scaleout.settings import QueueConfig


def _at(hour: int, minute: int = 0) -> float:
    return datetime(2026, 12, 6, hour, minute, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(("hour", "minute", "off_peak"), [
    (0, 59, False), (1, 0, True), (3, 30, True), (5, 59, True), (6, 0, False), (14, 0, False)])
async def test_a_daytime_window(hour: int, minute: int, off_peak: bool) -> None:
    window = WindowOffPeak(time(1, 0), time(6, 0), lambda: _at(hour, minute), UTC)
    assert await window.is_off_peak() is off_peak


@pytest.mark.parametrize(("hour", "off_peak"), [(21, False), (22, True), (23, True), (0, True), (5, True),
                                                (6, False)])
async def test_a_window_across_midnight(hour: int, off_peak: bool) -> None:
    assert await WindowOffPeak(time(22, 0), time(6, 0), lambda: _at(hour), UTC).is_off_peak() is off_peak


async def test_the_window_is_read_in_its_time_zone() -> None:
    shanghai = ZoneInfo("Asia/Shanghai")  # UTC+8: 18:00 UTC is 02:00 there
    assert await WindowOffPeak(time(1, 0), time(6, 0), lambda: _at(18), shanghai).is_off_peak()
    assert not await WindowOffPeak(time(1, 0), time(6, 0), lambda: _at(18), UTC).is_off_peak()


def _notice(off_peak: bool) -> OffPeakNotice:
    return OffPeakNotice(off_peak=off_peak, at_wall_s=1.0, expected_per_s=2.0, peak_per_s=10.0,
                         threshold_per_s=5.0, horizon_s=1800.0, reason="test")


def test_the_notice_travels_as_json_and_garbage_is_refused() -> None:
    assert OffPeakNotice.decode(_notice(True).encode()) == _notice(True)
    newer = b'{"off_peak": false, "at_wall_s": 1, "expected_per_s": 2, "peak_per_s": 3, "threshold_per_s": 1.5, ' \
            b'"horizon_s": 60, "confidence": 0.9}'
    assert OffPeakNotice.decode(newer).off_peak is False  # fields a newer autoscaler adds are ignored
    for garbage in (b"yes", b'{"off_peak": "maybe"}', b"\xc1"):
        with pytest.raises(BadRequest):
            OffPeakNotice.decode(garbage)
    assert offpeak_key("pg") == "pg:control:offpeak"


@dataclass
class _Switch:
    on: bool = False
    closed: bool = False

    async def is_off_peak(self) -> bool:
        return self.on

    async def close(self) -> None:
        self.closed = True


@dataclass
class _Client:
    value: bytes | None = None
    down: bool = False
    gets: int = 0
    closed: bool = False
    keys: list[str] = field(default_factory=list)

    async def get(self, key: str) -> bytes | None:
        self.gets += 1
        self.keys.append(key)
        if self.down:
            raise RedisConnectionError("Connection refused")
        return self.value

    async def aclose(self) -> None:
        self.closed = True


def _redis_off_peak(client: _Client, window: _Switch, clock: FakeClock) -> RedisOffPeak:
    return RedisOffPeak(client, "pg:control:offpeak", window, clock, cache_s=1.0,  # type: ignore[arg-type]
                        backoff=Backoff(clock, 2.0, 8.0))


async def test_the_published_word_wins_and_is_read_at_most_once_per_cache_period() -> None:
    clock, client, window = FakeClock(), _Client(_notice(True).encode()), _Switch(on=False)
    off_peak = _redis_off_peak(client, window, clock)
    assert await off_peak.is_off_peak() and await off_peak.is_off_peak()
    assert client.gets == 1 and client.keys == ["pg:control:offpeak"]
    client.value = _notice(False).encode()
    window.on = True  # a peak the forecast saw wins over the window too
    clock.advance(0.99)
    assert await off_peak.is_off_peak()  # still the cached answer
    clock.advance(0.01)
    assert not await off_peak.is_off_peak() and client.gets == 2
    await off_peak.close()
    assert client.closed and window.closed


async def test_nothing_published_or_unreadable_falls_back_to_the_window(caplog: pytest.LogCaptureFixture) -> None:
    clock, client, window = FakeClock(), _Client(None), _Switch(on=True)
    off_peak = _redis_off_peak(client, window, clock)
    with caplog.at_level(logging.INFO, logger="peakgate.jobs.offpeak_redis"):
        assert await off_peak.is_off_peak()
        client.value = b"not json"
        clock.advance(1.0)
        window.on = False
        assert not await off_peak.is_off_peak()
    assert "decided by the configured window: nothing published under pg:control:offpeak" in caplog.text
    assert "decided by the configured window: unreadable off-peak notice" in caplog.text


async def test_redis_out_of_reach_falls_back_to_the_window_and_is_left_alone_for_a_backoff(
        caplog: pytest.LogCaptureFixture) -> None:
    clock, client, window = FakeClock(), _Client(_notice(False).encode(), down=True), _Switch(on=True)
    off_peak = _redis_off_peak(client, window, clock)
    with caplog.at_level(logging.WARNING, logger="peakgate.jobs.offpeak_redis"):
        assert await off_peak.is_off_peak()
    assert client.gets == 1 and "Redis out of reach" in caplog.text
    clock.advance(1.0)
    assert await off_peak.is_off_peak() and client.gets == 1  # backing off for 2 s: no call
    client.down = False
    clock.advance(1.0)
    assert not await off_peak.is_off_peak() and client.gets == 2  # back: the forecast's word again


async def test_each_source_is_built_from_its_config() -> None:
    queue = QueueConfig(backend="redis")
    assert isinstance(build_off_peak(JobsConfig(), queue, FakeClock()), WindowOffPeak)
    built = build_off_peak(JobsConfig(off_peak_source="forecast"), queue, FakeClock())
    assert isinstance(built, RedisOffPeak)
    await built.close()


def test_the_forecast_source_needs_the_redis_queue() -> None:
    with pytest.raises(ValueError, match='set \\[queue\\] backend = "redis"'):
        Settings.model_validate({"jobs": {"off_peak_source": "forecast"}})
    Settings.model_validate({"jobs": {"off_peak_source": "forecast"}, "queue": {"backend": "redis"}})
