"""The autoscaler's side of forecast off-peak on a real redis-server: the publisher, as the loop drives it, writes
the notice through `RedisControl` with a TTL of a few ticks where a gateway's `RedisOffPeak` reads it."""

from __future__ import annotations

from redis_harness import RedisServer

from peakgate.clock import FakeClock
from peakgate.control.contract import Forecast, Signals, Tick
from peakgate.control.signals_redis import RedisControl
from peakgate.control.trough import TroughConfig
from peakgate.control.trough_publish import TroughPublisher
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.offpeak import OffPeakNotice, offpeak_key
from peakgate.jobs.offpeak_redis import build_off_peak
from peakgate.scaleout.settings import QueueConfig

WALL = 1_700_000_000.0


class _Wall:
    def now(self) -> float:
        return WALL


def _tick(at_s: float, rate: float) -> Tick:
    now = Signals(at_s=at_s, replicas=1, cpu_utilisation=0.1, queue_by_class={}, p95_latency_ms=50.0, in_flight=0,
                  request_rate_per_s=rate)
    return Tick(now, Forecast(at_s, 60.0, (rate,) * 30, (rate,) * 30), None)


async def test_the_published_trough_reaches_the_gateways_job_runner(redis_server: RedisServer) -> None:
    queue = QueueConfig(backend="redis", redis_url=redis_server.url)
    control = RedisControl.connect(queue)
    clock = FakeClock()
    gateway = build_off_peak(JobsConfig(off_peak_source="forecast"), queue, clock, lambda: WALL)
    publisher = TroughPublisher(TroughConfig(min_history_s=60.0), control, offpeak_key(queue.stream_prefix),
                                tick_s=10.0, wall=_Wall())
    try:
        await publisher.observe(_tick(0.0, 100.0))  # the evening peak
        assert not await gateway.is_off_peak()
        await publisher.observe(_tick(3600.0, 20.0))  # the night: 20/s against a 100/s peak
        raw = redis_server.client().get("pg:control:offpeak")
        assert raw is not None and OffPeakNotice.decode(raw).peak_per_s == 100.0
        assert 0 < redis_server.client().pttl("pg:control:offpeak") <= 30_000  # 3 ticks of 10 s
        clock.advance(1.0)
        assert await gateway.is_off_peak()
    finally:
        await control.close()
        await gateway.close()
