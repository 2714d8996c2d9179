"""Live scaling on loopback: a real Redis, a real gateway, and `peakgate autoscale --provider local` starting and
stopping real `peakgate worker` processes (one of them warm) under a real burst of requests."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from redis_harness import RedisServer, free_port
from scaleout.scaleout_procs import MODEL, beats, cluster_config, gateways_see, queue_empty, wait_for, write_config

from bench._http import Outcome, Probe, closed_loop_outcomes, metric, scrape

pytestmark = pytest.mark.slow
CLIENTS = 40  # more than three workers hold (8 segments each): the queue stays long while the burst lasts
BURST_S = 12.0


def _config(redis_url: str, tmp: Path) -> dict[str, Any]:
    """One echo model a worker serves at ~13 segments/s (batches of 2, 150 ms each), and an autoscaler ticking
    every 0.5 s: +2 replicas while 4 or more requests wait, -1 after 4 quiet ticks, 1..3 replicas, 1 warm."""
    config = cluster_config(redis_url, tmp / "data", delay_ms=150)
    config["models"][0] |= {"max_batch_size": 2, "preferred_batch_sizes": [2]}
    config["classes"]["interactive"] |= {"max_queue_wait_ms": 20_000}
    config["log_level"] = "info"
    return config


def _autoscale(config: dict[str, Any], gateway: str, tmp: Path, metrics_port: int) -> dict[str, Any]:
    return config | {"autoscale": {
        "provider": "local", "gateways": [gateway], "signal_window_s": 5, "metrics_port": metrics_port,
        "policy": {"kind": "threshold", "tick_s": 0.5, "cpu": None, "gpu_memory": None, "requests": None,
                   "queue": {"threshold": 4, "step": 2},
                   "scale_in": {"threshold": 0.3, "periods": 4, "step": 1, "cooldown_s": 1.0}},
        "clamps": {"min_replicas": 1, "max_replicas": 3},
        "warm": {"replicas": 1, "max_replicas": 1},
        "local": {"log_dir": str(tmp / "workers"), "start_timeout_s": 60, "stop_timeout_s": 20},
    }}


@contextmanager
def _process(log: Path, *args: str) -> Iterator[subprocess.Popen[bytes]]:
    """`peakgate ARGS`, stopped with SIGTERM at the end (the gateway is not ready before a worker is, so it cannot
    go through `bench._http.serve`, which waits for that)."""
    with log.open("wb") as sink:
        proc = subprocess.Popen([sys.executable, "-m", "peakgate.cli", *args], stdout=sink, stderr=subprocess.STDOUT)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _fleet(client: Any) -> tuple[int, int, int]:
    """(cold workers serving, warm workers serving, warm workers standing by), from the heartbeats."""
    live = [b for b in beats(client).values() if b.ready and not b.draining]
    return (sum(1 for b in live if not b.warm), sum(1 for b in live if b.warm and not b.standby),
            sum(1 for b in live if b.warm and b.standby))


def _burst(url: str) -> list[Outcome]:
    probes = [Probe.of("interactive", {"segments": [f"burst request {n}."], "source": "en", "target": "es",
                                       "model": MODEL}) for n in range(CLIENTS * 4)]
    outcomes, _ = asyncio.run(closed_loop_outcomes(url, probes, CLIENTS, duration_s=BURST_S, keep_payload=True))
    for index, outcome in enumerate(outcomes):  # outcome i answers probe i modulo len(probes)
        assert outcome.status == 200, (outcome.status, outcome.payload)
        assert outcome.payload is not None
        texts = [t["text"] for t in json.loads(outcome.payload)["translations"]]
        assert texts == json.loads(probes[index % len(probes)].body)["segments"]
    return outcomes


def _sees(gateway: str, ready: int) -> bool:
    try:
        return gateways_see([gateway], ready)
    except httpx.ConnectError:  # still starting: the workers may be ready first on a loaded machine
        return False


def _startup_s(metrics: str, kind: str) -> float:
    samples = scrape(metrics)
    count = metric(samples, "peakgate_autoscale_startup_seconds_count", kind=kind)
    assert count >= 1, f"no {kind} start was timed"
    return metric(samples, "peakgate_autoscale_startup_seconds_sum", kind=kind) / count


def test_local_provider_scales_real_workers_through_a_burst_and_the_warm_pool_promotes_faster(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    client = redis_server.client()
    gateway, port = f"http://127.0.0.1:{free_port()}", free_port()
    metrics = f"http://127.0.0.1:{port}"
    path = write_config(tmp_path / "config.json",
                        _autoscale(_config(redis_server.url, tmp_path), gateway, tmp_path, port))
    scale = ("autoscale", "--provider", "local", "--config", str(path))
    with _process(tmp_path / "autoscale.log", *scale) as autoscaler, \
            _process(tmp_path / "gateway.log", "serve", "--port", gateway.rsplit(":", 1)[1], "--config", str(path)):
        wait_for(lambda: _fleet(client) == (1, 0, 1), "one worker serving and one standing by", 60)
        wait_for(lambda: _sees(gateway, 1), "the gateway seeing its one worker", 30)
        seen: list[tuple[int, int, int]] = []
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.2):
                seen.append(_fleet(client))

        sampler = threading.Thread(target=sample)
        sampler.start()
        try:
            outcomes = _burst(gateway)
        finally:
            done.set()
            sampler.join()
        assert max(cold for cold, _, _ in seen) == 3  # scaled up to the bound with cold workers
        assert max(promoted for _, promoted, _ in seen) >= 1  # the warm worker bridged the cold starts
        wait_for(lambda: _fleet(client) == (1, 0, 1), "back to one worker after the burst", 40)
        cold_s, warm_s = _startup_s(metrics, "cold"), _startup_s(metrics, "warm")
        print(f"\n{len(outcomes)} requests answered; decision to first request served: "
              f"cold start {cold_s:.2f} s, warm promotion {warm_s:.2f} s")
        assert warm_s < cold_s
        samples = scrape(metrics)
        assert metric(samples, "peakgate_autoscale_decisions_total", policy="threshold", rule="queue") >= 1
        assert metric(samples, "peakgate_autoscale_decisions_total", policy="threshold", rule="scale_in") >= 2
        # Live cost: each tick's fleet priced and split over the engine work the gateway counted (open mode: the
        # anonymous tenant), the baseline replica on-demand, the burst on spot.
        assert metric(scrape(gateway), "peakgate_engine_characters_total", model=MODEL, tenant="anonymous") > 0
        for market in ("on-demand", "spot"):
            assert metric(samples, "peakgate_cost_total", model=MODEL, tenant="anonymous", market=market) > 0
        autoscaler.send_signal(signal.SIGTERM)
        assert autoscaler.wait(timeout=30) == 0
        log = (tmp_path / "autoscale.log").read_text()
        assert "rule queue: queue" in log and "rule scale_in" in log  # every decision logged with its reason
        assert "gone: exit code 0" in log  # drained on scale-in, exited cleanly
        assert not [line for line in log.splitlines() if " failed" in line and "control.loop: replica" in line]
        wait_for(lambda: not beats(client), "every worker gone after the autoscaler stopped", 5)
        assert queue_empty(client)
