"""Bad input, live: the control loop with the local provider starting real `peakgate worker` processes that fail
(a config the worker cannot read: it exits 2). Each failure is reported, starting backs off exponentially, the
loop keeps ticking, and once workers can start again one is started and serves."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

import httpx
import pytest
from redis_harness import RedisServer
from scaleout.scaleout_procs import beats, cluster_config, wait_for, write_config

from peakgate.clock import MonotonicClock
from peakgate.config import Settings
from peakgate.control.autoscale_cli import build_loop
from peakgate.control.loop_metrics import AutoscaleMetrics
from peakgate.control.loop_settings import LocalProviderConfig
from peakgate.control.providers.local import LocalProvider, Process, WorkerSpawner
from peakgate.control.signals_gpu import NoGpu
from peakgate.control.signals_redis import RedisControl
from peakgate.scaleout.wall import SystemWallClock

pytestmark = pytest.mark.slow


class _Switch:
    """The real spawner, pointed at a config path the test can change."""

    def __init__(self, config: LocalProviderConfig, path: Path) -> None:
        self.config = config
        self.path = path

    def __call__(self, name: str, standby: bool) -> Process:
        return WorkerSpawner(self.path, self.config)(name, standby)


async def test_failed_worker_starts_are_reported_and_retried_with_backoff_and_the_loop_never_stops(
    redis_server: RedisServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    good = write_config(tmp_path / "config.json", cluster_config(redis_server.url, tmp_path / "data") | {
        "autoscale": {"policy": {"kind": "static-peak", "replicas": 1, "tick_s": 0.2},
                      "warm": {"replicas": 0, "max_replicas": 0}}})
    settings = Settings.model_validate_json(good.read_text())
    local = LocalProviderConfig(log_dir=tmp_path / "workers", backoff_initial_s=0.5, backoff_max_s=2.0)
    spawn = _Switch(local, tmp_path / "missing.json")
    clock, metrics = MonotonicClock(), AutoscaleMetrics()
    redis = RedisControl.connect(settings.queue)
    provider = LocalProvider(spawn, redis, local, clock)
    async with httpx.AsyncClient() as http:
        loop = build_loop(settings, redis=redis, http=http, gpu=NoGpu(), provider=provider, clock=clock,
                          wall=SystemWallClock(), metrics=metrics)
        stop = asyncio.Event()
        run = asyncio.create_task(loop.run(stop))
        client = redis_server.client()
        try:
            with caplog.at_level(logging.WARNING, logger="peakgate.control"):
                while (metrics.registry.get_sample_value("peakgate_autoscale_replica_events_total",
                                                         {"kind": "failed"}) or 0) < 3:
                    assert not run.done(), "the loop stopped"
                    await asyncio.sleep(0.1)
            assert "exited with code 2 before it was ready" in caplog.text
            for delay in ("0.5s", "1.0s", "2.0s"):  # doubling, capped
                assert f"next start in {delay}" in caplog.text
            assert "cannot read config" in (local.log_dir / "worker-1.log").read_text()
            spawn.path = good
            await asyncio.to_thread(wait_for, lambda: any(b.ready for b in beats(client).values()),
                                    "a worker serving once starts succeed", 20)
            assert not run.done()
        finally:
            stop.set()
            await run
            await provider.close()
            await redis.close()
    assert not beats(client)  # drained and gone
