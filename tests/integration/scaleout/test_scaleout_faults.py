"""Bad input and faults with real processes and a real Redis: a worker for an unknown model, a worker whose
model does not load, a malformed queue entry, and Redis going away under a gateway (and coming back)."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from redis_harness import RedisServer
from scaleout_procs import (
    MODEL,
    STREAMS,
    beats,
    cluster_config,
    gateways_see,
    queue_empty,
    start_worker,
    wait_for,
    workers,
    write_config,
)

from bench._http import free_port, metric, scrape, serve

pytestmark = pytest.mark.slow
BODY = {"segments": ["Open the file"], "source": "en", "target": "es", "model": MODEL}


def test_a_worker_for_an_unknown_model_exits_2_naming_the_models_it_could_serve(tmp_path: Path) -> None:
    path = write_config(tmp_path / "config.json", cluster_config("redis://127.0.0.1:1/0", tmp_path))
    out = subprocess.run([sys.executable, "-m", "peakgate.cli", "worker", "--config", str(path), "--models", "nope"],
                         capture_output=True, timeout=60, check=False)
    assert out.returncode == 2
    assert b"unknown model 'nope'; the config has: echo-en-es" in out.stderr


def test_a_worker_whose_model_cannot_load_never_reports_ready_nor_takes_work(redis_server: RedisServer,
                                                                              tmp_path: Path) -> None:
    config = cluster_config(redis_server.url, tmp_path)
    config["models"] = [{"name": "broken", "engine": "ctranslate2", "source": "en", "target": "es",
                         "path": str(tmp_path / "no-such-model")}]
    config["tiers"] = {"medium": ["broken"]}
    client = redis_server.client()
    client.xadd("pg:q:broken:interactive", {"m": b"waiting for a worker"})
    worker = start_worker(write_config(tmp_path / "config.json", config), tmp_path / "worker.log")
    try:
        wait_for(lambda: bool(beats(client)), "the worker's first heartbeat")
        time.sleep(1.0)  # four heartbeats later: still not ready
        [beat] = beats(client).values()
        assert not beat.ready and beat.error is not None and "broken" in beat.error
        assert client.xinfo_groups("pg:q:broken:interactive") == []  # it never joined, so never read
        assert "will not take work" in worker.output()
    finally:
        worker.signal(signal.SIGTERM)
        assert worker.proc.wait(timeout=15) == 1


def test_a_malformed_entry_is_acknowledged_and_logged_not_retried(redis_server: RedisServer, tmp_path: Path) -> None:
    config = cluster_config(redis_server.url, tmp_path / "data")
    client = redis_server.client()
    with workers(write_config(tmp_path / "config.json", config), tmp_path, 1) as [worker], \
            serve(config, log=tmp_path / "g1.log") as gateway:
        wait_for(lambda: gateways_see([gateway.url], 1), "the gateway seeing a ready worker")
        client.xadd(STREAMS[0], {"m": b"\xc1 certainly not msgpack"})
        client.xadd(STREAMS[0], {"other": b"no payload field"})
        wait_for(lambda: queue_empty(client), "the bad entries acknowledged and deleted")
        time.sleep(1.5)  # past claim_idle_ms: nothing comes back to be retried
        [beat] = beats(client).values()
        assert beat.counts.malformed == 2 and beat.counts.reclaimed == 0
        assert worker.output().count("malformed entry") == 2
        answer = httpx.post(f"{gateway.url}/v1/translate", json=BODY, timeout=10)
        assert answer.status_code == 200 and answer.json()["translations"][0]["text"] == "Open the file"


def test_redis_going_away_gets_a_quick_503_with_retry_after_and_service_resumes_when_it_is_back(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    config = cluster_config(redis_server.url, tmp_path / "data")
    with workers(write_config(tmp_path / "config.json", config), tmp_path, 1), \
            serve(config, log=tmp_path / "g1.log") as gateway:
        wait_for(lambda: gateways_see([gateway.url], 1), "the gateway seeing a ready worker")
        assert httpx.post(f"{gateway.url}/v1/translate", json=BODY, timeout=10).status_code == 200
        redis_server.stop()
        for _ in range(3):
            started = time.monotonic()
            refused = httpx.post(f"{gateway.url}/v1/translate", json=BODY, timeout=10)
            assert time.monotonic() - started < 1.5  # fail fast: never the 20 s deadline
            assert refused.status_code == 503 and int(refused.headers["retry-after"]) >= 1
        redis_server.start()  # same port, empty: the worker re-creates its groups, the gateway reconnects

        def served() -> bool:
            return httpx.post(f"{gateway.url}/v1/translate", json=BODY, timeout=10).status_code == 200

        wait_for(served, "service after Redis came back", timeout_s=20)


def test_with_the_local_fallback_a_gateway_serves_on_its_own_engines_while_redis_is_down(
    redis_server: RedisServer, tmp_path: Path
) -> None:
    config = cluster_config(redis_server.url, tmp_path / "data", fallback="local")
    with serve(config, log=tmp_path / "g1.log") as gateway:
        redis_server.stop()
        answer = httpx.post(f"{gateway.url}/v1/translate", json=BODY, timeout=10)
        assert answer.status_code == 200 and answer.json()["translations"][0]["text"] == "Open the file"
        assert metric(scrape(gateway.url), "peakgate_queue_local_fallbacks_total", model=MODEL) == 1


def test_a_redis_gateway_is_ready_only_once_a_worker_serves_its_models(redis_server: RedisServer,
                                                                       tmp_path: Path) -> None:
    # The gateway loads no engines of its own (no local fallback): its readiness and the router's model health
    # come from the workers' heartbeats, not from engines it never started.
    config = write_config(tmp_path / "cluster.json", cluster_config(redis_server.url, tmp_path / "data"))
    port = free_port()
    argv = [sys.executable, "-m", "peakgate.cli", "serve", "--port", str(port), "--config", str(config)]
    with (tmp_path / "gateway.log").open("wb") as sink:
        gateway = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _status(f"{url}/healthz") == 200, "the gateway to listen")
        assert _status(f"{url}/readyz") == 503  # no worker yet
        with workers(config, tmp_path, 1):
            wait_for(lambda: _status(f"{url}/readyz") == 200, "the gateway to see a ready worker")
            reply = httpx.post(f"{url}/v1/translate", json={"segments": ["Hello there"], "source": "en",
                                                             "target": "es"}, timeout=10.0)
            assert (reply.status_code, reply.json()["translations"][0]["text"]) == (200, "Hello there")
    finally:
        gateway.terminate()
        gateway.wait(timeout=20)


def _status(url: str) -> int:
    try:
        return httpx.get(url, timeout=1.0).status_code
    except httpx.HTTPError:
        return 0
