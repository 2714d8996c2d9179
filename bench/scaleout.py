"""Scale-out: gateways and workers over the Redis queue, with the echo engine, as ratios within one run.

    python -m bench.scaleout [--delay-ms 100] [--batch 8] [--clients 128] [--seconds 3] [--cost-requests 2000]

1. scaling: closed-loop single-sentence load for `--seconds` against 1 and 2 gateways with 1, 2 and 3 workers
   (clients split evenly over the gateways). The echo engine holds each batch `--delay-ms` (simulated engine
   time, no CPU) and takes at most `--batch` sentences, so each worker adds a fixed capacity
   (2 batches in flight x `--batch` / `--delay-ms`) while costing only its own queue handling: throughput
   growing with workers shows the gateways and the queue are not the limit; where it stops growing, they are
   (or the cores are). Reported: req/s and p99 per configuration, both as ratios to 1 gateway x 1 worker, and
   the cores each role kept busy (gateways, workers, Redis, this load generator). `--delay-ms 0` makes every
   process pure CPU: the curve then shows where the machine's cores run out.
   Workers are stopped one by one (SIGTERM, drained) from 3 to 1, gateways stay up.
2. queue cost: the same closed loop of `--cost-requests` requests at `--cost-clients` clients with a
   zero-delay echo engine, through `peakgate serve` with the in-process queue and through 1 gateway + Redis +
   1 worker; CPU-microseconds per request of each process (from /proc), so the queue's cost per request is
   (gateway + Redis) against the in-process server, with the worker's share beside it.
Everything (load generator, Redis, gateways, workers) shares this machine's cores.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import redis

from bench._common import render_table
from bench._http import Outcome, Probe, Server, closed_loop_outcomes, cpu_seconds, free_port, metric, scrape, serve

MODEL = "echo-en-es"


@dataclass(frozen=True, slots=True)
class Run:
    gateways: int
    workers: int
    rps: float
    p99_ms: float
    errors: int
    cores: dict[str, float]  # role -> cores busy while measuring (CPU seconds per second)


@dataclass(frozen=True, slots=True)
class Cost:
    setup: str
    requests: int
    cpu_us: dict[str, float]  # process -> CPU microseconds per request


def config(delay_ms: float, batch: int, redis_url: str | None) -> dict[str, object]:
    queue = {"backend": "redis", "redis_url": redis_url, "heartbeat_s": 0.25, "claim_idle_ms": 2_000} \
        if redis_url else {}
    return {"models": [{"name": MODEL, "engine": "echo", "source": "en", "target": "es", "delay_ms": delay_ms,
                        "max_batch_size": batch, "preferred_batch_sizes": [batch]}],
            "tiers": {"medium": [MODEL]}, "cache": {"enabled": False}, "tm": {"enabled": False},
            "log_level": "warning", "queue": queue}


def probes(count: int) -> list[Probe]:
    # Distinct texts: identical sentences in flight together would be coalesced into one.
    return [Probe.of("interactive", {"segments": [f"Sentence number {n} of the scale-out run."], "source": "en",
                                     "target": "es", "model": MODEL}) for n in range(count)]


@contextlib.contextmanager
def redis_server() -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    binary = os.environ.get("PEAKGATE_REDIS_SERVER") or shutil.which("redis-server")
    if binary is None:
        sys.exit("redis-server not found (set PEAKGATE_REDIS_SERVER or put it on PATH)")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait(lambda: _pings(port), "redis-server to answer", proc)
        yield f"redis://127.0.0.1:{port}/0", proc
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _pings(port: int) -> bool:
    with contextlib.suppress(redis.RedisError), redis.Redis(port=port, socket_timeout=0.2) as client:
        return bool(client.ping())
    return False


def _wait(ready: object, what: str, proc: subprocess.Popen[bytes] | None = None, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not ready():  # type: ignore[operator]
        if (proc is not None and proc.poll() is not None) or time.monotonic() > deadline:
            raise RuntimeError(f"gave up waiting for {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def workers(cfg: dict[str, object], count: int) -> Iterator[list[subprocess.Popen[bytes]]]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "config.json"
        path.write_text(json.dumps(cfg))
        argv = [sys.executable, "-m", "peakgate.cli", "worker", "--config", str(path)]
        procs = [subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for _ in range(count)]
        try:
            yield procs
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
            for proc in procs:
                proc.wait(timeout=30)


def sees(servers: Sequence[Server], ready: int) -> bool:
    return all(metric(scrape(s.url), "peakgate_queue_workers_ready", model=MODEL) == ready for s in servers)


def load(servers: Sequence[Server], work: Sequence[Probe], clients: int, seconds: float) -> tuple[list[Outcome], float]:
    """`clients` closed-loop clients split evenly over `servers` for `seconds`; every outcome and the wall time."""
    share = max(1, clients // len(servers))
    parts = [work[i::len(servers)] for i in range(len(servers))]

    async def run() -> tuple[list[Outcome], float]:
        started = time.perf_counter()
        results = await asyncio.gather(*(closed_loop_outcomes(s.url, p, share, duration_s=seconds)
                                         for s, p in zip(servers, parts, strict=True)))
        return [o for outcomes, _ in results for o in outcomes], time.perf_counter() - started

    return asyncio.run(run())


def summarize(gateways: int, workers_: int, outcomes: list[Outcome], elapsed: float,
              cores: dict[str, float]) -> Run:
    good = sorted(o.latency_s for o in outcomes if o.status == 200)
    p99 = good[min(len(good) - 1, int(0.99 * len(good)))] * 1000 if good else float("nan")
    return Run(gateways, workers_, len(good) / elapsed, p99, len(outcomes) - len(good), cores)


def measured(roles: dict[str, list[int]], servers: Sequence[Server], work: Sequence[Probe], clients: int,
             seconds: float) -> tuple[list[Outcome], float, dict[str, float]]:
    """`load`, plus the cores each role (a list of pids; "client" is this process) kept busy meanwhile."""
    before = {role: sum(cpu_seconds(pid) for pid in pids) for role, pids in roles.items()}
    own = time.process_time()
    outcomes, elapsed = load(servers, work, clients, seconds)
    cores = {role: (sum(cpu_seconds(pid) for pid in pids) - before[role]) / elapsed for role, pids in roles.items()}
    return outcomes, elapsed, {**cores, "client": (time.process_time() - own) / elapsed}


def scaling(args: argparse.Namespace) -> list[Run]:
    work = probes(20_000)
    runs: list[Run] = []
    with redis_server() as (url, redis_proc), workers(config(args.delay_ms, args.batch, url), 3) as procs:
        cfg = config(args.delay_ms, args.batch, url)
        with serve(cfg) as g1, serve(cfg) as g2:
            for count in (3, 2, 1):
                _wait(lambda c=count: sees([g1, g2], c), f"both gateways seeing {count} workers")
                roles = {"gateways": [g1.proc.pid, g2.proc.pid], "workers": [p.pid for p in procs[:count]],
                         "redis": [redis_proc.pid]}
                for fronts in ([g1], [g1, g2]):
                    load(fronts, work, args.clients, 1.0)  # warm-up
                    outcomes, elapsed, cores = measured(roles, fronts, work, args.clients, args.seconds)
                    runs.append(summarize(len(fronts), count, outcomes, elapsed, cores))
                    print(f"  {runs[-1]}", file=sys.stderr)
                if count > 1:
                    procs[count - 1].send_signal(signal.SIGTERM)
                    procs[count - 1].wait(timeout=30)
    return sorted(runs, key=lambda r: (r.gateways, r.workers))


def cost(args: argparse.Namespace) -> list[Cost]:
    work = probes(args.cost_requests)
    results: list[Cost] = []
    with serve(config(0.0, args.batch, None)) as server:
        asyncio.run(closed_loop_outcomes(server.url, work[:200], args.cost_clients))  # warm-up
        before = cpu_seconds(server.proc.pid)
        asyncio.run(closed_loop_outcomes(server.url, work, args.cost_clients))
        results.append(Cost("in-process", len(work), {"server": _per(cpu_seconds(server.proc.pid) - before, work)}))
    with redis_server() as (url, redis_proc), workers(config(0.0, args.batch, url), 1) as [worker], \
            serve(config(0.0, args.batch, url)) as gateway:
        _wait(lambda: sees([gateway], 1), "the gateway seeing its worker")
        asyncio.run(closed_loop_outcomes(gateway.url, work[:200], args.cost_clients))
        pids = {"gateway": gateway.proc.pid, "redis": redis_proc.pid, "worker": worker.pid}
        before_all = {name: cpu_seconds(pid) for name, pid in pids.items()}
        asyncio.run(closed_loop_outcomes(gateway.url, work, args.cost_clients))
        spent = {name: _per(cpu_seconds(pid) - before_all[name], work) for name, pid in pids.items()}
        results.append(Cost("redis queue", len(work), spent))
    return results


def _per(seconds: float, work: Sequence[Probe]) -> float:
    return seconds / len(work) * 1e6


def report(runs: list[Run], costs: list[Cost]) -> str:
    base = next(r for r in runs if (r.gateways, r.workers) == (1, 1))
    roles = ("gateways", "workers", "redis", "client")
    table = render_table(
        ("gateways", "workers", "req/s", "p99 ms", "errors", "req/s ratio", "p99 ratio", "cores",
         *(f"{role} cores" for role in roles)),
        [(r.gateways, r.workers, r.rps, r.p99_ms, r.errors, r.rps / base.rps, r.p99_ms / base.p99_ms,
          sum(r.cores.values()), *(r.cores[role] for role in roles)) for r in runs],
    )
    inproc = costs[0].cpu_us["server"]
    queue = costs[1].cpu_us
    lines = [
        "scaling (ratios to 1 gateway x 1 worker):", table, "",
        "CPU-us per request:",
        render_table(("setup", "process", "CPU-us/request"),
                     [(c.setup, name, us) for c in costs for name, us in c.cpu_us.items()], digits=0),
        "",
        f"queue cost per request: gateway + Redis {queue['gateway'] + queue['redis']:.0f} us against the in-process "
        f"server's {inproc:.0f} us ({(queue['gateway'] + queue['redis']) / inproc:.2f}x); "
        f"with the worker {sum(queue.values()):.0f} us ({sum(queue.values()) / inproc:.2f}x)",
    ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--delay-ms", type=float, default=100.0, help="echo engine time per batch")
    parser.add_argument("--batch", type=int, default=8, help="echo engine's largest batch")
    parser.add_argument("--clients", type=int, default=128, help="closed-loop clients, split over the gateways")
    parser.add_argument("--seconds", type=float, default=3.0, help="measured time per configuration")
    parser.add_argument("--cost-requests", type=int, default=2_000)
    parser.add_argument("--cost-clients", type=int, default=16)
    args = parser.parse_args(argv)
    print(f"cores: {os.cpu_count()}, echo {args.delay_ms:.0f} ms per batch of <= {args.batch}", file=sys.stderr)
    runs = scaling(args)
    costs = cost(args)
    print(report(runs, costs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
