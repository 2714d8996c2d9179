"""Serving throughput and isolation, as ratios against baselines measured in the same run.

    python -m bench.throughput [--clients 48] [--sentences 400] [--requests 2000]

1. served: peakgate over HTTP with `--clients` concurrent single-sentence clients (int8 student), `--requests`
   requests cycling through the sentences (long enough for a steady state; nothing repeats while in flight)
   vs (a) the same engine called directly at its best batch size (goal >= 0.9)
   and (b) a naive one-request-at-a-time server over the same engine (goal >= 5x);
2. interactive p99 while a batch-class flood runs beside it vs interactive p99 alone (goal <= 2x);
3. gateway overhead on the cache-free echo path: requests per server CPU-second.
Client and server share this machine's cores, so the served figures include the load generator's cost.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import Sequence

from bench._common import default_dev_path, load_dev
from bench._http import LoadResult, closed_loop, cpu_seconds, serve
from peakgate.backends.base import DecodeOptions
from peakgate.backends.factory import build_backend
from peakgate.config import REPO_MODELS_DIR, default_models

MODEL = "student-en-es-int8"
DIRECT_BATCH_SIZES = (16, 32, 64)


def _single_model_config(model: str) -> dict[str, object]:
    config = next(m for m in default_models() if m.name == model)
    # Cache off: the probes repeat across phases, and cache hits would measure the HTTP layer, not scheduling.
    return {"models": [config.model_dump(mode="json")], "tiers": {"medium": [model]}, "default_tier": "medium",
            "log_level": "warning", "cache": {"enabled": False}}


def _bodies(sentences: Sequence[str], priority: str = "interactive") -> list[dict[str, object]]:
    return [{"segments": [s], "source": "en", "target": "es", "priority": priority} for s in sentences]


async def direct(sentences: Sequence[str]) -> dict[int, float]:
    """Sentences/s of the engine alone at each batch size (interactive decoding: greedy), with as many
    batches in flight as the engine runs side by side (`inter_threads`): its best use without a server."""
    config = next(m for m in default_models() if m.name == MODEL)
    backend = build_backend(config, REPO_MODELS_DIR)
    await backend.start()
    streams = max(1, config.inter_threads)

    async def stream(chunks: Sequence[Sequence[str]]) -> None:
        for chunk in chunks:
            await backend.translate_batch(chunk, "en", "es", DecodeOptions())

    try:
        rates = {}
        for size in DIRECT_BATCH_SIZES:
            chunks = [sentences[i : i + size] for i in range(0, len(sentences), size)]
            started = time.perf_counter()
            await asyncio.gather(*(stream(chunks[k::streams]) for k in range(streams)))
            rates[size] = len(sentences) / (time.perf_counter() - started)
        return rates
    finally:
        await backend.close()


def served(sentences: Sequence[str], clients: int) -> tuple[LoadResult, float, float]:
    """The load result, plus the cores the server process (engine + gateway) and this load generator used."""
    with serve(_single_model_config(MODEL)) as server:
        asyncio.run(closed_loop(server.url, _bodies(sentences[:64]), clients))  # warm-up
        server_cpu, own_cpu = cpu_seconds(server.proc.pid), time.process_time()
        result = asyncio.run(closed_loop(server.url, _bodies(sentences), clients))
        server_cpu, own_cpu = cpu_seconds(server.proc.pid) - server_cpu, time.process_time() - own_cpu
    return result, server_cpu / result.seconds, own_cpu / result.seconds


def naive(sentences: Sequence[str], clients: int) -> LoadResult:
    argv = [sys.executable, "-m", "bench.naive_server", "--port", "{port}", "--model", MODEL]
    with serve(None, argv=argv) as server:
        asyncio.run(closed_loop(server.url, _bodies(sentences[:32]), clients))
        return asyncio.run(closed_loop(server.url, _bodies(sentences), clients))


async def _interactive_with_flood(url: str, probes: Sequence[str], flood: Sequence[str], clients: int) -> LoadResult:
    stop = asyncio.Event()
    batch_bodies = [{"segments": list(flood[i : i + 8]), "source": "en", "target": "es", "priority": "batch"}
                    for i in range(0, len(flood), 8)]
    flood_task = asyncio.create_task(closed_loop(url, batch_bodies, clients, stop=stop))
    await asyncio.sleep(1.0)  # let the flood fill the queue first
    try:
        return await closed_loop(url, _bodies(probes), 4)
    finally:
        stop.set()
        await flood_task


def isolation(sentences: Sequence[str], clients: int) -> tuple[LoadResult, LoadResult]:
    probes, flood = sentences[:160], sentences[160:]
    with serve(_single_model_config(MODEL)) as server:
        asyncio.run(closed_loop(server.url, _bodies(sentences[:64]), 8))
        alone = asyncio.run(closed_loop(server.url, _bodies(probes), 4))
        loaded = asyncio.run(_interactive_with_flood(server.url, probes, flood, clients))
    return alone, loaded


def echo(requests: int, clients: int) -> tuple[LoadResult, float]:
    config = {"models": [{"name": "echo", "engine": "echo", "source": "en", "target": "es"}],
              "tiers": {"medium": ["echo"]}, "default_tier": "medium", "log_level": "warning"}
    texts = [f"Hello number {i}." for i in range(requests)]  # distinct: nothing coalesces
    with serve(config) as server:
        asyncio.run(closed_loop(server.url, _bodies(texts[:500]), clients))
        before = cpu_seconds(server.proc.pid)
        result = asyncio.run(closed_loop(server.url, _bodies(texts), clients))
        used = cpu_seconds(server.proc.pid) - before
    return result, used


def _row(name: str, result: LoadResult) -> str:
    return (f"{name:<34} {result.rps:9.1f} req/s  p50 {result.percentile(0.5) * 1000:7.1f} ms  "
            f"p99 {result.percentile(0.99) * 1000:7.1f} ms  errors {result.errors}")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=48)
    parser.add_argument("--sentences", type=int, default=400)
    parser.add_argument("--requests", type=int, default=2000, help="served and naive requests per phase")
    parser.add_argument("--echo-requests", type=int, default=4000)
    args = parser.parse_args(argv)
    sentences = [row.en for row in load_dev(default_dev_path())][: args.sentences]
    print(f"cpus={os.cpu_count()} clients={args.clients} sentences={len(sentences)} requests={args.requests} "
          f"model={MODEL}")
    cycled = [sentences[i % len(sentences)] for i in range(args.requests)]

    before = asyncio.run(direct(sentences))
    srv, server_cores, client_cores = served(cycled, args.clients)
    nai = naive(cycled, args.clients)
    after = asyncio.run(direct(sentences))
    best = {size: max(before[size], after[size]) for size in DIRECT_BATCH_SIZES}
    best_size = max(best, key=lambda s: best[s])
    for size in DIRECT_BATCH_SIZES:
        print(f"direct engine, batch {size:<3}              {best[size]:9.1f} sent/s")
    print(_row(f"served, {args.clients} clients", srv))
    print(f"  while served: server process {server_cores:.2f} cores (engine + gateway), "
          f"load generator {client_cores:.2f} cores, of {os.cpu_count()}")
    print(_row(f"naive one-at-a-time, {args.clients} clients", nai))
    print(f"served / direct@{best_size}: {srv.rps / best[best_size]:.2f}  (goal >= 0.9)")
    print(f"served / naive:      {srv.rps / nai.rps:.2f}x (goal >= 5x)")

    alone, loaded = isolation(sentences, args.clients)
    print(_row("interactive alone (4 clients)", alone))
    print(_row(f"interactive + batch flood ({args.clients})", loaded))
    print(f"interactive p99 with flood / alone: {loaded.percentile(0.99) / alone.percentile(0.99):.2f} (goal <= 2)")

    result, cpu = echo(args.echo_requests, 32)
    print(_row("echo path, 32 clients", result))
    print(f"echo gateway: {result.done / cpu:.0f} requests per server CPU-second ({cpu:.2f} CPU-s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
