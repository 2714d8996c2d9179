"""Real scale-out processes for the integration tests: `peakgate worker` subprocesses, gateway configs, and
bounded waits on what the workers publish in Redis."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from bench._http import metric, scrape
from peakgate.scaleout.cluster import Heartbeat, decode_beat

MODEL = "echo-en-es"
PREFIX = "pg"
STREAMS = [f"{PREFIX}:q:{MODEL}:{p}" for p in ("interactive", "document", "batch")]


def cluster_config(redis_url: str, data_dir: Path, *, delay_ms: float = 0.0, **queue: Any) -> dict[str, Any]:
    """One echo model behind the Redis queue, fast leases (claims after 1 s idle), nothing cached."""
    return {
        "models": [{"name": MODEL, "engine": "echo", "source": "en", "target": "es", "delay_ms": delay_ms}],
        "tiers": {"medium": [MODEL]}, "cache": {"enabled": False}, "data_dir": str(data_dir),
        "log_level": "info", "shutdown_grace_s": 10.0,
        "classes": {"interactive": {"deadline_ms": 20_000}},
        "queue": {"backend": "redis", "redis_url": redis_url, "claim_idle_ms": 1_000, "heartbeat_s": 0.25,
                  **queue},
    }


def write_config(path: Path, config: dict[str, Any]) -> Path:
    path.write_text(json.dumps(config))
    return path


@dataclass
class WorkerProc:
    proc: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def signal(self, sig: int) -> None:
        os.kill(self.proc.pid, sig)


def start_worker(config: Path, log: Path, *args: str) -> WorkerProc:
    sink = log.open("wb")
    argv = [sys.executable, "-m", "peakgate.cli", "worker", "--config", str(config), *args]
    proc = subprocess.Popen(argv, stdout=sink, stderr=subprocess.STDOUT)
    sink.close()
    return WorkerProc(proc, log)


@contextlib.contextmanager
def workers(config: Path, logs: Path, count: int) -> Iterator[list[WorkerProc]]:
    procs = [start_worker(config, logs / f"worker-{n}.log") for n in range(count)]
    try:
        yield procs
    finally:
        for worker in procs:
            if worker.proc.poll() is None:
                worker.proc.send_signal(signal.SIGTERM)
        for worker in procs:
            try:
                worker.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                worker.proc.kill()
                worker.proc.wait()


def beats(client: redis.Redis) -> dict[str, Heartbeat]:
    """Every live heartbeat, by worker id."""
    found: dict[str, Heartbeat] = {}
    for key in client.scan_iter(match=f"{PREFIX}:w:*"):
        payload = client.get(key)
        if payload is not None:
            beat = decode_beat(payload)  # type: ignore[arg-type]
            found[beat.worker] = beat
    return found


def wait_for(condition: Callable[[], bool], what: str, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s} s waiting for {what}")
        time.sleep(0.05)


def gateways_see(urls: list[str], ready: int) -> bool:
    """Every gateway's picture (polled from heartbeats every `heartbeat_s`) holds `ready` ready workers."""
    return all(metric(scrape(url), "peakgate_queue_workers_ready", model=MODEL) == ready for url in urls)


def pending_by_consumer(client: redis.Redis) -> dict[str, int]:
    """Entries read and not yet acknowledged, per worker (consumer) id, over the model's streams."""
    held: dict[str, int] = {}
    for stream in STREAMS:
        with contextlib.suppress(redis.ResponseError):  # no group yet
            for consumer in client.xpending(stream, "workers")["consumers"]:
                name = consumer["name"].decode() if isinstance(consumer["name"], bytes) else consumer["name"]
                held[name] = held.get(name, 0) + int(consumer["pending"])
    return held


def queue_empty(client: redis.Redis) -> bool:
    """Nothing in any stream, nothing pending: all work answered and acknowledged."""
    return all(client.xlen(s) == 0 for s in STREAMS) and not any(pending_by_consumer(client).values())
