"""Off-peak from the forecast on a real redis-server: a gateway's `RedisOffPeak` reads the notice under
`{prefix}:control:offpeak`, falls back to the configured window when the notice expires or Redis is down, and a
job runner asking it runs a deferrable job once the notice says off-peak (the autoscaler's side, writing it:
`tests/integration/control/test_control_trough_redis.py`)."""

from __future__ import annotations

import asyncio
import time as wall_time
from collections.abc import Sequence
from datetime import time
from pathlib import Path

import redis
from redis_harness import RedisServer, free_port

from peakgate.atrest import Sealer
from peakgate.clock import FakeClock, MonotonicClock
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import Job, NewJob
from peakgate.jobs.offpeak import OffPeak, OffPeakNotice, offpeak_key
from peakgate.jobs.offpeak_redis import build_off_peak
from peakgate.jobs.runner import JobRunner
from peakgate.jobs.store import SqliteJobStore
from peakgate.scaleout.settings import QueueConfig

NOON = 1_800_000_000.0 - 1_800_000_000.0 % 86_400 + 12 * 3600  # 12:00 UTC: outside the window below
# Off-peak by the window only from 01:00 to 06:00 UTC; the forecast is read fresh every 10 ms.
FORECAST = JobsConfig(off_peak_source="forecast", off_peak_cache_s=0.01, off_peak_timezone="UTC",
                      off_peak_start=time(1, 0), off_peak_end=time(6, 0), chunk_segments=10, idle_poll_s=0.02)


def _notice(off_peak: bool) -> bytes:
    return OffPeakNotice(off_peak=off_peak, at_wall_s=NOON, expected_per_s=3.0, peak_per_s=40.0,
                         threshold_per_s=20.0, horizon_s=1800.0, reason="test").encode()


def _gateway_side(queue: QueueConfig, clock: FakeClock | MonotonicClock, wall_s: float = NOON) -> OffPeak:
    return build_off_peak(FORECAST, queue, clock, lambda: wall_s)


async def _expired(client: redis.Redis, key: str) -> None:
    deadline = wall_time.monotonic() + 5.0
    while True:
        if not client.exists(key):
            return
        assert wall_time.monotonic() < deadline, f"{key} never expired"
        await asyncio.sleep(0.02)


async def test_the_gateway_reads_the_notice_until_it_expires(redis_server: RedisServer) -> None:
    queue = QueueConfig(backend="redis", redis_url=redis_server.url, stream_prefix="pgt")
    clock, client = FakeClock(), redis_server.client()
    gateway = _gateway_side(queue, clock)
    try:
        assert not await gateway.is_off_peak()  # nothing published: the window, and noon is outside it
        client.set("pgt:control:offpeak", _notice(True), px=200)
        clock.advance(1.0)
        assert await gateway.is_off_peak()
        await _expired(client, "pgt:control:offpeak")  # the autoscaler stopped refreshing it
        clock.advance(1.0)
        assert not await gateway.is_off_peak()
    finally:
        await gateway.close()


async def test_redis_down_falls_back_to_the_window() -> None:
    queue = QueueConfig(backend="redis", redis_url=f"redis://127.0.0.1:{free_port()}/0")  # nothing listens
    at_night = _gateway_side(queue, FakeClock(), wall_s=NOON - 9 * 3600)  # 03:00 UTC
    at_noon = _gateway_side(queue, FakeClock())
    try:
        assert await at_night.is_off_peak()
        assert not await at_noon.is_off_peak()
    finally:
        await at_night.close()
        await at_noon.close()


async def _upper(segments: Sequence[str], job: Job) -> list[str]:
    return [s.upper() for s in segments]


async def _status_after(store: SqliteJobStore, job_id: str, seconds: float, want: str) -> str:
    deadline = wall_time.monotonic() + seconds
    while True:
        job = store.get(job_id)
        assert job is not None
        if job.status == want or wall_time.monotonic() > deadline:
            return job.status
        await asyncio.sleep(0.02)


async def test_a_deferrable_job_runs_when_the_published_notice_says_off_peak(
        redis_server: RedisServer, tmp_path: Path) -> None:
    queue = QueueConfig(backend="redis", redis_url=redis_server.url)
    client = redis_server.client()
    client.set(offpeak_key(queue.stream_prefix), _notice(False), px=60_000)
    clock = MonotonicClock()
    store = SqliteJobStore(tmp_path / "jobs.db", sealer=Sealer.ephemeral())
    runner = JobRunner(store, _upper, clock, config=FORECAST, off_peak=_gateway_side(queue, clock),
                       wall=lambda: NOON)
    job = store.create(NewJob(tenant="acme", kind="batch", source="en", target="es", segments=("a", "b"),
                              deferrable=True, latest_finish=NOON + 86_400))
    await runner.start()
    try:
        assert await _status_after(store, job.id, 0.3, "done") == "queued"  # peak, by the forecast
        client.set(offpeak_key(queue.stream_prefix), _notice(True), px=60_000)
        assert await _status_after(store, job.id, 5.0, "done") == "done"
    finally:
        await runner.close()
