"""Scale-out on loopback with real processes and a real Redis: two gateways, three workers, a worker killed
with SIGKILL in the middle of its batches, and a worker drained with SIGTERM."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import threading
from pathlib import Path

import httpx
import pytest
from redis_harness import RedisServer
from scaleout_procs import (
    MODEL,
    beats,
    cluster_config,
    gateways_see,
    pending_by_consumer,
    queue_empty,
    wait_for,
    workers,
    write_config,
)

from bench._http import Outcome, Probe, closed_loop_outcomes, metric, scrape, serve

pytestmark = pytest.mark.slow


def _probes(gateway: str, count: int) -> list[Probe]:
    return [Probe.of("interactive", {"segments": [f"{gateway} request {n} first.", f"{gateway} request {n} second"],
                                     "source": "en", "target": "es", "model": MODEL}) for n in range(count)]


def _load(urls: list[str], probes: list[list[Probe]], clients: int) -> list[list[Outcome]]:
    async def both() -> list[list[Outcome]]:
        runs = [closed_loop_outcomes(url, ps, clients, keep_payload=True) for url, ps in zip(urls, probes, strict=True)]
        return [outcomes for outcomes, _ in await asyncio.gather(*runs)]

    return asyncio.run(both())


def _answered_exactly(outcomes: list[Outcome], probes: list[Probe]) -> None:
    """Every request answered 200 with its own segments (echo), in order: nothing lost, mixed up or doubled."""
    assert len(outcomes) == len(probes)
    for outcome, probe in zip(outcomes, probes, strict=True):
        assert outcome.status == 200, (outcome.status, outcome.payload)
        assert outcome.payload is not None
        texts = [t["text"] for t in json.loads(outcome.payload)["translations"]]
        assert texts == json.loads(probe.body)["segments"]


def test_two_gateways_three_workers_a_worker_killed_mid_batch_loses_nothing(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    config = cluster_config(redis_server.url, tmp_path / "data", delay_ms=300)
    path = write_config(tmp_path / "config.json", config)
    client = redis_server.client()
    victim: dict[str, int] = {}
    with workers(path, tmp_path, 3) as procs, serve(config, log=tmp_path / "g1.log") as g1, \
            serve(config, log=tmp_path / "g2.log") as g2:
        wait_for(lambda: gateways_see([g1.url, g2.url], 3), "both gateways seeing three ready workers")
        by_pid = {w.proc.pid: w for w in procs}

        def kill_one_mid_batch() -> None:
            # The first worker seen holding several entries (read, not acknowledged: in its running batch or
            # the next one), once the load is in full swing.
            def holding() -> bool:
                held = {c: n for c, n in pending_by_consumer(client).items() if n >= 4}
                ids = {b.worker: b.pid for b in beats(client).values()}
                for consumer, count in held.items():
                    if ids.get(consumer) in by_pid:
                        victim.update(pid=ids[consumer], held=count)
                        return True
                return False

            wait_for(holding, "a worker holding entries", timeout_s=15)
            by_pid[victim["pid"]].signal(signal.SIGKILL)

        killer = threading.Thread(target=kill_one_mid_batch)
        killer.start()
        probes = [_probes("g1", 40), _probes("g2", 40)]
        results = _load([g1.url, g2.url], probes, clients=12)
        killer.join()
        for outcomes, sent in zip(results, probes, strict=True):
            _answered_exactly(outcomes, sent)
        assert victim["held"] >= 4 and by_pid[victim["pid"]].proc.wait(timeout=5) == -signal.SIGKILL
        survivors = beats(client).values()
        assert sum(b.counts.reclaimed for b in survivors) >= victim["held"]  # they ran again elsewhere
        wait_for(lambda: queue_empty(client), "an empty, fully acknowledged queue", timeout_s=5)
        # Every reply the gateways read was either handed to its one waiting caller or dropped as unmatched.
        dropped = sum(metric(scrape(g.url), "peakgate_queue_replies_dropped_total", reason="malformed")
                      for g in (g1, g2))
        assert dropped == 0


def test_sigterm_drains_a_worker_it_answers_what_it_holds_and_exits_0(redis_server: RedisServer,
                                                                      tmp_path: Path) -> None:
    config = cluster_config(redis_server.url, tmp_path / "data", delay_ms=500)
    path = write_config(tmp_path / "config.json", config)
    client = redis_server.client()
    with workers(path, tmp_path, 1) as [worker], serve(config, log=tmp_path / "g1.log") as gateway:
        wait_for(lambda: gateways_see([gateway.url], 1), "the gateway seeing a ready worker")

        def terminate_while_holding() -> None:
            wait_for(lambda: any(pending_by_consumer(client).values()), "the worker holding entries")
            worker.signal(signal.SIGTERM)

        stopper = threading.Thread(target=terminate_while_holding)
        stopper.start()
        probes = _probes("g1", 8)
        [outcomes] = _load([gateway.url], [probes], clients=8)
        stopper.join()
        _answered_exactly(outcomes, probes)  # no other worker exists: the draining one answered them all
        try:  # the drain ends within shutdown_grace_s (10 s); closing Redis and the engines comes after it
            code = worker.proc.wait(timeout=30)
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"the worker did not exit after SIGTERM; its log:\n{worker.output()[-4000:]}") from exc
        assert code == 0
        assert queue_empty(client) and beats(client) == {}
        assert "draining" in worker.output()


def test_the_worker_command_is_documented() -> None:
    import sys

    out = subprocess.run([sys.executable, "-m", "peakgate.cli", "worker", "--help"], capture_output=True,
                         timeout=60, check=False)
    assert out.returncode == 0
    assert b"--redis" in out.stdout and b"--models" in out.stdout and b"--concurrency" in out.stdout


def test_two_gateways_three_workers_share_one_bucket_and_one_quota(redis_server: RedisServer,
                                                                   tmp_path: Path) -> None:
    # The topology with shared admission on: limits hold across the gateways, whichever gets the request.
    config = cluster_config(redis_server.url, tmp_path / "data") | {
        "keys": [{"key": "burst", "tenant": "bursty", "rate_chars_per_s": 0.01, "burst_chars": 100},
                 {"key": "metered", "tenant": "metered", "quota_chars": 100}],
        "admission": {"backend": "redis", "redis_url": redis_server.url},
    }
    path = write_config(tmp_path / "config.json", config)

    def send(url: str, key: str) -> int:
        reply = httpx.post(f"{url}/v1/translate", json={"segments": ["x" * 10], "source": "en", "target": "es"},
                           headers={"Authorization": f"Bearer {key}"}, timeout=10)
        return reply.status_code

    with workers(path, tmp_path, 3), serve(config, log=tmp_path / "g1.log") as g1, \
            serve(config, log=tmp_path / "g2.log") as g2:
        wait_for(lambda: gateways_see([g1.url, g2.url], 3), "both gateways seeing three ready workers")
        burst = [send((g1.url, g2.url)[i % 2], "burst") for i in range(16)]
        assert burst.count(200) == 10 and burst.count(429) == 6  # one bucket of 100 characters, not one each
        assert [send(g1.url, "metered") for _ in range(6)] == [200] * 6
        usage = httpx.get(f"{g2.url}/v2/usage", headers={"Authorization": "DeepL-Auth-Key metered"}, timeout=10)
        assert usage.json()["character_count"] == 60  # spent on g1, seen on g2
        assert [send(g2.url, "metered") for _ in range(5)] == [200] * 4 + [402]
