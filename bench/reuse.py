"""The reuse path (cache) through the HTTP API, as ratios against baselines measured in the same run.

    python -m bench.reuse [--clients 32] [--hit-requests 10000] [--replay-requests 4000] [--zipf-s 1.1]

1. hit path: a server over the int8 student whose timed requests are all cache hits (the phrases are sent once
   first), `--clients` closed-loop single-segment clients; req/s, p50/p99, server CPU-seconds and requests per
   server CPU-second (goal: p99 <= 5 ms and >= 3k req/s on one core), beside the cache-free echo path
   (an echo-engine server, distinct texts) measured the same way, as the ratio. A one-client probe gives the
   hit latency without client queueing.
2. Zipf replay: `--replay-requests` single-segment requests drawn Zipf(s) over the dev sentences (seeded),
   against a fresh student server: hit rate from the responses' `origin` and from /metrics, engine segments
   run (`peakgate_batch_size_sum`) vs segments requested ("engine work saved"), and the replay's throughput
   against the same replay with the cache disabled. The config has no "cache off" switch: the baseline sets
   `cache.l1_max_bytes = 1`, so no entry ever fits and none is stored (in-flight single-flight sharing of an
   identical miss, and the batcher's coalescing, still apply there: they are counted and printed).
Client and server share this machine's cores, so the served figures include the load generator's cost.
"""

from __future__ import annotations

import argparse
import asyncio
import bisect
import itertools
import json
import os
import random
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from bench._common import default_dev_path, load_dev
from bench._http import LoadResult, Probe, closed_loop, closed_loop_outcomes, cpu_seconds, metric, scrape, serve
from peakgate.config import default_models

MODEL = "student-en-es-int8"
ECHO_CONFIG: dict[str, object] = {
    "models": [{"name": "echo", "engine": "echo", "source": "en", "target": "es"}],
    "tiers": {"medium": ["echo"]}, "default_tier": "medium",
}
CACHE_OFF = {"l1_max_bytes": 1}  # every entry is too big to store: nothing is ever cached


def model_config(model: str = MODEL) -> dict[str, object]:
    config = next(m for m in default_models() if m.name == model)
    return {"models": [config.model_dump(mode="json")], "tiers": {"medium": [model]}, "default_tier": "medium"}


def _isolated(config: dict[str, object], cache: dict[str, object] | None = None) -> dict[str, object]:
    """Quiet, every store in memory (no ./var TM or cache state from earlier runs), optional cache settings."""
    out = dict(config) | {"log_level": "warning", "data_dir": None}
    if cache is not None:
        out["cache"] = cache
    return out


def _bodies(texts: Sequence[str], priority: str = "interactive") -> list[dict[str, object]]:
    return [{"segments": [t], "source": "en", "target": "es", "priority": priority} for t in texts]


def zipf_sample(n_items: int, n_draws: int, s: float, seed: int) -> list[int]:
    """`n_draws` ranks in [0, n_items) drawn with P(k) proportional to 1/(k+1)^s, reproducibly."""
    rng = random.Random(seed)
    cumulative = list(itertools.accumulate(1.0 / (k + 1) ** s for k in range(n_items)))
    total = cumulative[-1]
    return [min(n_items - 1, bisect.bisect_left(cumulative, rng.random() * total)) for _ in range(n_draws)]


# --- 1. the hit path ---


@dataclass
class PathResult:
    load: LoadResult
    cpu_s: float
    probe: LoadResult  # one client, no queueing behind other clients
    served: dict[str, float] = field(default_factory=dict)  # segments by origin during the timed run
    excluded: list[str] = field(default_factory=list)  # phrases never served from the cache (left out)

    @property
    def per_cpu_s(self) -> float:
        return self.load.done / self.cpu_s if self.cpu_s else float("nan")


def _served_by_origin(before: dict[tuple[str, frozenset[tuple[str, str]]], float],
                      after: dict[tuple[str, frozenset[tuple[str, str]]], float]) -> dict[str, float]:
    return {o: metric(after, "peakgate_segments_served_total", origin=o)
            - metric(before, "peakgate_segments_served_total", origin=o)
            for o in ("engine", "cache", "tm_exact", "tm_repaired")}


def hit_path(model_cfg: dict[str, object], phrases: Sequence[str], requests: int, clients: int,
             probe_n: int = 500) -> PathResult:
    """Warm the cache with every phrase, keep those a second pass serves from the cache (a phrase the service
    will not cache, e.g. one the redaction stage shields, is left out and listed), then time `requests`
    requests cycling over them: all hits."""
    with serve(_isolated(model_cfg)) as server:
        asyncio.run(closed_loop(server.url, _bodies(phrases), min(clients, 8)))
        check = [Probe.of("check", body) for body in _bodies(phrases)]
        outcomes, _ = asyncio.run(closed_loop_outcomes(server.url, check, min(clients, 8), keep_payload=True))
        hits = {p for p, o in zip(phrases, outcomes, strict=True) if o.status == 200 and o.payload is not None
                and json.loads(o.payload)["translations"][0].get("origin") == "cache"}
        kept = [p for p in phrases if p in hits] or list(phrases)
        timed = [kept[i % len(kept)] for i in range(requests)]
        before_metrics = scrape(server.url)
        before = cpu_seconds(server.proc.pid)
        load = asyncio.run(closed_loop(server.url, _bodies(timed), clients))
        used = cpu_seconds(server.proc.pid) - before
        after_metrics = scrape(server.url)
        probe = asyncio.run(closed_loop(server.url, _bodies(timed[:probe_n]), 1))
    return PathResult(load, used, probe, _served_by_origin(before_metrics, after_metrics),
                      [p for p in phrases if p not in hits])


def echo_path(requests: int, clients: int, probe_n: int = 500) -> PathResult:
    """The cache-free echo path: distinct texts, so every request misses and runs the (free) echo engine."""
    texts = [f"Hello number {i}." for i in range(requests)]
    config = _isolated(ECHO_CONFIG)
    with serve(config) as server:  # warm-up with other distinct texts, then the timed run
        asyncio.run(closed_loop(server.url, _bodies([f"Warm-up {i}." for i in range(500)]), clients))
        before_metrics = scrape(server.url)
        before = cpu_seconds(server.proc.pid)
        load = asyncio.run(closed_loop(server.url, _bodies(texts), clients))
        used = cpu_seconds(server.proc.pid) - before
        after_metrics = scrape(server.url)
        probe = asyncio.run(closed_loop(server.url, _bodies([f"Probe {i}." for i in range(probe_n)]), 1))
    return PathResult(load, used, probe, _served_by_origin(before_metrics, after_metrics))


# --- 2. the Zipf replay ---


@dataclass
class ReplayResult:
    requests: int
    distinct: int
    ok: int
    errors: int
    seconds: float
    origins: Counter[str]  # from the responses
    metrics: dict[str, float]  # deltas from /metrics

    @property
    def rps(self) -> float:
        return self.ok / self.seconds if self.seconds else 0.0

    @property
    def response_hit_rate(self) -> float:
        return self.origins["cache"] / max(1, sum(self.origins.values()))

    @property
    def engine_saved(self) -> float:
        return 1.0 - self.metrics["engine_segments"] / max(1, self.requests)


_METRICS = {
    "engine_segments": ("peakgate_batch_size_sum", {}),
    "engine_batches": ("peakgate_batch_size_count", {}),
    "cache_hits": ("peakgate_cache_hits_total", {}),
    "cache_misses": ("peakgate_cache_misses_total", {}),
    "single_flight": ("peakgate_cache_single_flight_total", {}),
    "coalesced": ("peakgate_coalesced_total", {}),
    "served_cache": ("peakgate_segments_served_total", {"origin": "cache"}),
    "served_engine": ("peakgate_segments_served_total", {"origin": "engine"}),
}


def replay(model_cfg: dict[str, object], phrases: Sequence[str], ranks: Sequence[int], clients: int, *,
           cache_off: bool = False, warm: Sequence[str] = ()) -> ReplayResult:
    texts = [phrases[r] for r in ranks]
    probes = [Probe.of("replay", body) for body in _bodies(texts)]
    config = _isolated(model_cfg, CACHE_OFF if cache_off else None)
    with serve(config) as server:
        if warm:  # engine warm-up on texts outside the phrase set, so the cache starts cold for the phrases
            asyncio.run(closed_loop(server.url, _bodies(warm), min(clients, 8)))
        before = scrape(server.url)
        outcomes, seconds = asyncio.run(closed_loop_outcomes(server.url, probes, clients, keep_payload=True))
        after = scrape(server.url)
    origins: Counter[str] = Counter()
    ok = 0
    for outcome in outcomes:
        if outcome.status != 200 or outcome.payload is None:
            continue
        ok += 1
        for translation in json.loads(outcome.payload)["translations"]:
            origins[translation.get("origin", "engine")] += 1
    deltas = {key: metric(after, name, **labels) - metric(before, name, **labels)
              for key, (name, labels) in _METRICS.items()}
    return ReplayResult(len(ranks), len(set(ranks)), ok, len(outcomes) - ok, seconds, origins, deltas)


# --- report ---


def _row(name: str, result: LoadResult) -> str:
    return (f"{name:<36} {result.rps:9.1f} req/s  p50 {result.percentile(0.5) * 1000:7.2f} ms  "
            f"p99 {result.percentile(0.99) * 1000:7.2f} ms  errors {result.errors}")


def report_paths(hit: PathResult, echo: PathResult, clients: int) -> list[str]:
    lines = [
        _row(f"cache hits, {clients} clients", hit.load),
        _row("cache hits, 1 client", hit.probe),
        f"  hit path served by origin (timed run): {_origins(hit.served)}",
        f"  hit path: {hit.per_cpu_s:.0f} requests per server CPU-second ({hit.cpu_s:.2f} CPU-s for "
        f"{hit.load.done} requests)  (goal >= 3000 on one core)",
        _row(f"echo path (cache-free), {clients} clients", echo.load),
        _row("echo path (cache-free), 1 client", echo.probe),
        f"  echo path served by origin (timed run): {_origins(echo.served)}",
        f"  echo path: {echo.per_cpu_s:.0f} requests per server CPU-second ({echo.cpu_s:.2f} CPU-s)",
        f"hit path / echo path: req/s {_ratio(hit.load.rps, echo.load.rps)}, "
        f"req per CPU-s {_ratio(hit.per_cpu_s, echo.per_cpu_s)}, "
        f"p99 ({clients} clients) {_ratio(hit.load.percentile(0.99), echo.load.percentile(0.99))}, "
        f"p99 (1 client) {_ratio(hit.probe.percentile(0.99), echo.probe.percentile(0.99))}",
        f"hit p99: {hit.load.percentile(0.99) * 1000:.2f} ms at {clients} clients, "
        f"{hit.probe.percentile(0.99) * 1000:.2f} ms at 1 client (goal <= 5 ms)",
    ]
    if hit.excluded:
        shown = "; ".join(repr(p[:40]) for p in hit.excluded[:5])
        lines.append(f"  {len(hit.excluded)} phrases never served from the cache were left out of the timed hit run "
                     f"(e.g. {shown})")
    if hit.served.get("cache", 0) < hit.load.done:
        lines.append(f"  NOTE: only {hit.served.get('cache', 0):.0f} of {hit.load.done} timed segments were cache "
                     "hits: the hit-path figures include misses")
    return lines


def report_replay(cached: ReplayResult, off: ReplayResult, s: float, n_phrases: int) -> list[str]:
    lines = [f"Zipf(s={s}) replay: {cached.requests} requests over {n_phrases} phrases "
             f"({cached.distinct} distinct drawn; best possible hit rate {1 - cached.distinct / cached.requests:.1%})"]
    for name, r in (("cache on", cached), ("cache off (l1_max_bytes=1)", off)):
        m = r.metrics
        lookups = m["cache_hits"] + m["cache_misses"]
        lines += [
            f"  {name:<28} {r.rps:8.1f} req/s  {r.seconds:6.2f} s  ok {r.ok}  errors {r.errors}",
            f"    origins in responses: {_origins(dict(r.origins))}; served as cache {r.response_hit_rate:.1%} "
            "(hits + in-flight single-flight shares)",
            f"    /metrics: served cache {m['served_cache']:.0f} engine {m['served_engine']:.0f}; cache hits "
            f"{m['cache_hits']:.0f} / lookups {lookups:.0f} = {m['cache_hits'] / max(1.0, lookups):.1%}; "
            f"single-flight {m['single_flight']:.0f}; batcher-coalesced {m['coalesced']:.0f}",
            f"    engine segments run {m['engine_segments']:.0f} in {m['engine_batches']:.0f} batches for "
            f"{r.requests} segments requested: engine work saved {r.engine_saved:.1%}",
        ]
    lines.append(f"replay throughput cache on / cache off: {_ratio(cached.rps, off.rps)}; engine segments "
                 f"cache on / off: {_ratio(cached.metrics['engine_segments'], off.metrics['engine_segments'])}")
    lines.append("  (baseline: the same replay with the cache disabled via cache.l1_max_bytes=1, the config having "
                 "no on/off switch)")
    return lines


def _origins(counts: dict[str, float]) -> str:
    return ", ".join(f"{k} {v:.0f}" for k, v in sorted(counts.items()) if v) or "none"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b else "n/a"


def run(model_cfg: dict[str, object], phrases: Sequence[str], *, clients: int, hit_requests: int,
        echo_requests: int, replay_requests: int, zipf_s: float, seed: int, probe_n: int = 500) -> list[str]:
    hit = hit_path(model_cfg, phrases, hit_requests, clients, probe_n)
    echo = echo_path(echo_requests, clients, probe_n)
    lines = report_paths(hit, echo, clients)
    ranks = zipf_sample(len(phrases), replay_requests, zipf_s, seed)
    order = list(range(len(phrases)))
    random.Random(seed).shuffle(order)  # which phrase is the most popular: not simply the first dev row
    ranked = [phrases[i] for i in order]
    warm = [f"Warm-up, {p}" for p in phrases[: min(64, len(phrases))]]
    cached = replay(model_cfg, ranked, ranks, clients, warm=warm)
    off = replay(model_cfg, ranked, ranks, clients, cache_off=True, warm=warm)
    return lines + report_replay(cached, off, zipf_s, len(phrases))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--hit-requests", type=int, default=10_000)
    parser.add_argument("--echo-requests", type=int, default=10_000)
    parser.add_argument("--replay-requests", type=int, default=4_000)
    parser.add_argument("--phrases", type=int, default=400, help="dev sentences in the phrase set (at most 400)")
    parser.add_argument("--zipf-s", type=float, default=1.1)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--model", default=MODEL)
    args = parser.parse_args(argv)
    phrases = list(dict.fromkeys(row.en for row in load_dev(default_dev_path())))[: args.phrases]
    print(f"cpus={os.cpu_count()} clients={args.clients} phrases={len(phrases)} model={args.model}")
    for line in run(model_config(args.model), phrases, clients=args.clients, hit_requests=args.hit_requests,
                    echo_requests=args.echo_requests, replay_requests=args.replay_requests, zipf_s=args.zipf_s,
                    seed=args.seed):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
