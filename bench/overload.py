"""Overload: a mixed workload offered at a multiple of the measured capacity, against a naive FIFO server.

    python -m bench.overload [--load 10] [--duration 20] [--no-naive]

1. capacity: closed-loop saturating throughput (req/s and segments/s) of the mixed workload on the int8
   student server (`--clients` clients, `--capacity-s` seconds; a
   429/503 is retried after its Retry-After, at most 0.5 s, so the completed requests keep the mix);
2. unloaded interactive p99: `--unloaded-clients` interactive clients alone, sending the overload run's own first
   interactive texts;
3. overload: open-loop Poisson arrivals at `--load` x capacity for `--duration` s, mix (default) 30 %
   interactive single sentences, 20 % documents (5-10 sentences, priority document), 50 % batch (8 sentences,
   priority batch). Each request carries its class deadline (`deadline_ms`) and the client waits that long
   (plus `--grace-s`) before giving up. Per class: offered, accepted (200), rejected (429/503 with
   Retry-After; without it is counted as a BUG), other errors (e.g. 504 deadline), lost (no answer and no
   rejection before the client timeout, or the connection dropped: the goal is 0), p50/p99 of accepted.
   Goodput = accepted segments answered inside the arrival window per second, against capacity (goal >= 95 %);
   interactive p99 against its unloaded p99 (goal <= 2x);
4. recovery (peakgate only): the moment the overload window ends, arrivals drop to `--recovery-load` x capacity
   for `--recovery-s`; per class, the time until every later second of arrivals is >= 99 % answered 200
   (goal: within the class deadline; see bench.recovery);
5. the same open-loop run (same arrivals, same absolute rate) against `bench.naive_server`, a FIFO
   one-request-at-a-time server over the same engine (its own closed-loop capacity measured first), side by side.
Texts are dev sentences made distinct (a pass number appended when the 400 run out) and the peakgate cache is
disabled (`cache.enabled = false`), so neither server is helped by repetition.
Client and server share this machine's cores, so the served figures include the load generator's cost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import httpx

from bench._common import default_dev_path, load_dev
from bench._http import (
    CONN_ERROR,
    TIMEOUT,
    OpenLoopResult,
    Outcome,
    Probe,
    closed_loop_outcomes,
    open_loop,
    scrape,
    serve,
)
from bench.recovery import Recovery, recovery, recovery_lines
from peakgate.config import default_models

MODEL = "student-en-es-int8"
CLASSES = ("interactive", "document", "batch")
DEFAULT_MIX = {"interactive": 0.3, "document": 0.2, "batch": 0.5}
# Client-side deadlines (sent as deadline_ms; the client timeout). Shorter than the server's class defaults for
# document (30 s) and batch (300 s) so a run drains in seconds; interactive keeps its default 3 s.
DEFAULT_DEADLINES_S = {"interactive": 3.0, "document": 10.0, "batch": 15.0}
CACHE_OFF = {"enabled": False}
ECHO_CONFIG: dict[str, object] = {
    "models": [{"name": "echo", "engine": "echo", "source": "en", "target": "es"}],
    "tiers": {"medium": ["echo"]}, "default_tier": "medium",
}


def model_config(model: str = MODEL) -> dict[str, object]:
    config = next(m for m in default_models() if m.name == model)
    return {"models": [config.model_dump(mode="json")], "tiers": {"medium": [model]}, "default_tier": "medium"}


def server_config(config: dict[str, object]) -> dict[str, object]:
    """Quiet, stores in memory, cache disabled: the overload run measures scheduling, not reuse."""
    return dict(config) | {"log_level": "warning", "data_dir": None, "cache": CACHE_OFF}


class _Texts:
    """Dev sentences in a seeded order, each handed out once; after a full pass they come back numbered."""

    def __init__(self, sentences: Sequence[str], rng: random.Random) -> None:
        self._sentences = list(sentences)
        rng.shuffle(self._sentences)
        self._used = 0

    def take(self, n: int) -> list[str]:
        out = []
        for _ in range(n):
            lap, i = divmod(self._used, len(self._sentences))
            self._used += 1
            # The lap number in front: appended after a full stop it was split off as a sentence of its own,
            # one text shared (coalesced) by every request of that lap, across classes.
            out.append(self._sentences[i] if lap == 0 else f"({lap}) {self._sentences[i]}")
        return out


def workload(sentences: Sequence[str], n: int, *, mix: dict[str, float] | None = None,
             deadlines_s: dict[str, float] | None = None, grace_s: float = 0.5, seed: int = 0) -> list[Probe]:
    """`n` requests of the mixed workload, classes drawn by `mix` with a seeded RNG."""
    mix = mix or DEFAULT_MIX
    deadlines_s = deadlines_s or DEFAULT_DEADLINES_S
    rng = random.Random(seed)
    texts = _Texts(sentences, random.Random(seed + 1))
    classes = rng.choices(list(mix), weights=list(mix.values()), k=n)
    probes = []
    for klass in classes:
        count = 1 if klass == "interactive" else rng.randint(5, 10) if klass == "document" else 8
        body = {"segments": texts.take(count), "source": "en", "target": "es", "priority": klass,
                "deadline_ms": int(deadlines_s[klass] * 1000)}
        probes.append(Probe.of(klass, body, timeout_s=deadlines_s[klass] + grace_s))
    return probes


def unloaded_probes(overload_probes: Sequence[Probe], n: int) -> list[Probe]:
    """The overload run's own first `n` interactive requests: the unloaded baseline decodes the same texts
    (numbered after the first pass, as nearly all overload texts are: ~15 % more tokens than bare ones)."""
    return [p for p in overload_probes if p.klass == "interactive"][:n]


def percentile(values: Sequence[float], q: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


# --- measurements ---


@dataclass
class Capacity:
    rps: float
    sps: float  # segments/s
    ok: int
    failed: int
    seconds: float
    failed_statuses: Counter[int] = field(default_factory=Counter)  # status (0 timeout, -1 connection) -> count
    mix: Counter[str] = field(default_factory=Counter)  # completed requests by class


async def capacity(url: str, probes: Sequence[Probe], clients: int, duration_s: float,
                   retry_cap_s: float = 0.5) -> Capacity:
    """Closed loop for `duration_s`; a rejected request is retried after its Retry-After (capped), so the
    requests completed keep the workload's mix even when the server sheds some of the clients."""
    outcomes, seconds = await closed_loop_outcomes(url, probes, clients, duration_s=duration_s,
                                                   retry_rejected_s=retry_cap_s)
    ok = [o for o in outcomes if o.status == 200]
    return Capacity(len(ok) / seconds, sum(o.segments for o in ok) / seconds, len(ok), len(outcomes) - len(ok),
                    seconds, Counter(o.status for o in outcomes if o.status != 200), Counter(o.klass for o in ok))


async def unloaded_p99(url: str, probes: Sequence[Probe], clients: int) -> tuple[float, float, int]:
    outcomes, _ = await closed_loop_outcomes(url, probes, clients)
    ok = [o.latency_s for o in outcomes if o.status == 200]
    return percentile(ok, 0.5), percentile(ok, 0.99), len(outcomes) - len(ok)


@dataclass
class ClassStats:
    offered: int = 0
    accepted: int = 0
    rejected: int = 0  # 429/503 with Retry-After
    rejected_no_retry_after: int = 0  # 429/503 without it: a bug
    errors: Counter[int] = field(default_factory=Counter)  # other statuses (504 deadline, 5xx, 4xx)
    timeouts: int = 0  # lost: the client timeout passed with no answer
    conn_errors: int = 0  # lost: the connection failed
    not_sent: int = 0  # the client's in-flight cap was reached (client-side, not the server's doing)
    latencies_s: list[float] = field(default_factory=list)
    reject_latencies_s: list[float] = field(default_factory=list)

    @property
    def lost(self) -> int:
        return self.timeouts + self.conn_errors


@dataclass
class RunStats:
    classes: dict[str, ClassStats]
    goodput_sps: float  # accepted segments answered inside the window, per second
    goodput_rps: float
    accepted_segments_total: int
    rate: float
    duration_s: float
    lag_s: float
    rejected_by_reason: dict[str, float] = field(default_factory=dict)  # from /metrics, when the server has it
    decoded_segments: int | None = None  # segments the server's engines ran during the run (its /metrics)

    @property
    def total(self) -> ClassStats:
        out = ClassStats()
        for s in self.classes.values():
            out.offered += s.offered
            out.accepted += s.accepted
            out.rejected += s.rejected
            out.rejected_no_retry_after += s.rejected_no_retry_after
            out.errors.update(s.errors)
            out.timeouts += s.timeouts
            out.conn_errors += s.conn_errors
            out.not_sent += s.not_sent
            out.latencies_s += s.latencies_s
            out.reject_latencies_s += s.reject_latencies_s
        return out


def tally(result: OpenLoopResult, probes: Sequence[Probe]) -> RunStats:
    classes = {k: ClassStats() for k in CLASSES}
    for i in range(result.offered):
        classes.setdefault(probes[i % len(probes)].klass, ClassStats()).offered += 1
    sent = Counter(o.klass for o in result.outcomes)
    for klass, stats in classes.items():
        stats.not_sent = stats.offered - sent[klass]
    end = result.started + result.duration_s
    window_segments = window_requests = accepted_segments = 0
    for o in result.outcomes:
        stats = classes[o.klass]
        _count(stats, o)
        if o.status == 200:
            accepted_segments += o.segments
            if o.done_at <= end:
                window_segments += o.segments
                window_requests += 1
    return RunStats(classes, window_segments / result.duration_s, window_requests / result.duration_s,
                    accepted_segments, 0.0, result.duration_s, result.lag_s)


def _count(stats: ClassStats, o: Outcome) -> None:
    if o.status == 200:
        stats.accepted += 1
        stats.latencies_s.append(o.latency_s)
    elif o.status in (429, 503):
        if o.retry_after:
            stats.rejected += 1
        else:
            stats.rejected_no_retry_after += 1
        stats.reject_latencies_s.append(o.latency_s)
    elif o.status == TIMEOUT:
        stats.timeouts += 1
    elif o.status == CONN_ERROR:
        stats.conn_errors += 1
    else:
        stats.errors[o.status] += 1


async def overload(url: str, probes: Sequence[Probe], rate: float, duration_s: float, *, seed: int,
                   max_inflight: int) -> RunStats:
    result = await open_loop(url, probes, rate, duration_s, seed=seed, max_inflight=max_inflight)
    stats = tally(result, probes)
    stats.rate = rate
    return stats


def _server_counts(url: str) -> tuple[dict[str, float], float]:
    """Rejections and drops by reason, and the segments the engines ran (every model), from `/metrics`."""
    try:
        samples = scrape(url)
    except httpx.HTTPError:
        return {}, 0.0
    out: dict[str, float] = {}
    decoded = 0.0
    for (name, labels), value in samples.items():
        if name == "peakgate_rejected_total" and value:
            d = dict(labels)
            out[f"{d.get('reason', '?')}/{d.get('priority', '?')}"] = value
        elif name == "peakgate_dropped_total" and value:
            d = dict(labels)
            out[f"dropped:{d.get('reason', '?')}"] = out.get(f"dropped:{d.get('reason', '?')}", 0.0) + value
        elif name == "peakgate_batch_size_sum":
            decoded += value
    return out, decoded


@dataclass
class ServerRun:
    name: str
    capacity: Capacity
    stats: RunStats | None = None
    unloaded: tuple[float, float, int] | None = None
    recovery: list[Recovery] | None = None


def measure_peakgate(config: dict[str, object], sentences: Sequence[str], args: argparse.Namespace,
                     rate: float | None = None) -> ServerRun:
    cap_probes = workload(sentences, 2_000, grace_s=args.grace_s, seed=args.seed + 10)
    with serve(server_config(config)) as server:
        asyncio.run(closed_loop_outcomes(server.url, cap_probes[:48], 8))  # warm-up
        cap = asyncio.run(capacity(server.url, cap_probes, args.clients, args.capacity_s))
        rate = rate if rate is not None else args.load * cap.rps
        probes = _overload_probes(sentences, rate, args)
        unloaded = asyncio.run(unloaded_p99(server.url, unloaded_probes(probes, args.unloaded_requests),
                                            args.unloaded_clients))
        run = ServerRun("peakgate", cap, unloaded=unloaded)
        before, decoded_before = _server_counts(server.url)
        run.stats, run.recovery = asyncio.run(surge_then_recover(server.url, sentences, probes, rate,
                                                                 recovery_rate=cap.rps * args.recovery_load, args=args))
        after, decoded_after = _server_counts(server.url)
        run.stats.rejected_by_reason = {k: v - before.get(k, 0.0) for k, v in after.items() if v - before.get(k, 0.0)}
        run.stats.decoded_segments = int(decoded_after - decoded_before)
        # The engines' count spans the recovery phase too: its accepted segments count on the other side.
        run.stats.accepted_segments_total += sum(r.accepted_segments for r in run.recovery or () if r.klass == "all")
    return run


async def surge_then_recover(url: str, sentences: Sequence[str], probes: Sequence[Probe], rate: float, *,
                             recovery_rate: float, args: argparse.Namespace) -> tuple[RunStats, list[Recovery] | None]:
    """The overload window, and the recovery phase starting the moment its arrivals stop (not once its last
    answers are in: a batch request may be waited on for its whole deadline)."""
    async def after_the_surge() -> list[Recovery] | None:
        if args.recovery_s <= 0:
            return None
        await asyncio.sleep(args.duration)
        calm = workload(sentences, max(16, int(recovery_rate * args.recovery_s * 1.3) + 16), grace_s=args.grace_s,
                        seed=args.seed + 20)
        result = await open_loop(url, calm, recovery_rate, args.recovery_s, seed=args.seed + 1,
                                 max_inflight=args.max_inflight)
        return recovery(result, CLASSES)

    surge = overload(url, probes, rate, args.duration, seed=args.seed, max_inflight=args.max_inflight)
    stats, recovered = await asyncio.gather(surge, after_the_surge())
    return stats, recovered


def measure_naive(sentences: Sequence[str], args: argparse.Namespace, rate: float) -> ServerRun:
    argv = [sys.executable, "-m", "bench.naive_server", "--port", "{port}", "--model", args.model]
    cap_probes = workload(sentences, 2_000, grace_s=args.grace_s, seed=args.seed + 10)
    with serve(None, argv=argv) as server:
        asyncio.run(closed_loop_outcomes(server.url, cap_probes[:16], 4))
        cap = asyncio.run(capacity(server.url, cap_probes, args.clients, args.capacity_s))
        run = ServerRun("naive FIFO", cap)
        run.stats = asyncio.run(overload(server.url, _overload_probes(sentences, rate, args), rate, args.duration,
                                         seed=args.seed, max_inflight=args.max_inflight))
    return run


def _overload_probes(sentences: Sequence[str], rate: float, args: argparse.Namespace) -> list[Probe]:
    n = max(16, int(rate * args.duration * 1.3) + 16)  # enough for the Poisson draw without cycling
    return workload(sentences, n, grace_s=args.grace_s, seed=args.seed)


# --- report ---


def _ms(seconds: float) -> str:
    return "-" if math.isnan(seconds) else f"{seconds * 1000:.0f}"


def class_table(run: ServerRun) -> list[str]:
    assert run.stats is not None
    header = (f"  {'class':<12}{'offered':>8}{'200':>7}{'rejected':>9}{'no-R-A':>7}{'errors':>8}{'lost':>6}"
              f"{'not-sent':>9}{'p50 ms':>8}{'p99 ms':>8}{'rej p50':>8}{'rej p99':>8}")
    lines = [header]
    rows = [*run.stats.classes.items(), ("all", run.stats.total)]
    for klass, s in rows:
        errors = sum(s.errors.values())
        lines.append(f"  {klass:<12}{s.offered:>8}{s.accepted:>7}{s.rejected:>9}{s.rejected_no_retry_after:>7}"
                     f"{errors:>8}{s.lost:>6}{s.not_sent:>9}{_ms(percentile(s.latencies_s, 0.5)):>8}"
                     f"{_ms(percentile(s.latencies_s, 0.99)):>8}{_ms(percentile(s.reject_latencies_s, 0.5)):>8}"
                     f"{_ms(percentile(s.reject_latencies_s, 0.99)):>8}")
    total = run.stats.total
    if total.errors:
        lines.append(f"  other statuses: {dict(sorted(total.errors.items()))}")
    if total.lost:
        lines.append(f"  lost: {total.timeouts} client timeouts, {total.conn_errors} connection errors")
    if run.stats.rejected_by_reason:
        lines.append(f"  server /metrics rejected/dropped during the run: {run.stats.rejected_by_reason}")
    return lines


def report(runs: Sequence[ServerRun], args: argparse.Namespace) -> list[str]:
    pg = runs[0]
    assert pg.stats is not None and pg.unloaded is not None
    lines = []
    for run in runs:
        lines.append(f"{run.name}: capacity (closed loop, {args.clients} clients, {run.capacity.seconds:.1f} s) "
                     f"{run.capacity.rps:.1f} req/s = {run.capacity.sps:.1f} segments/s "
                     f"(ok {run.capacity.ok} {dict(run.capacity.mix)}, not ok {run.capacity.failed}"
                     + (f" by status {dict(run.capacity.failed_statuses)}, retried" if run.capacity.failed else "")
                     + ")")
        if run.unloaded is not None:
            u50, u99, ufail = run.unloaded
            lines.append(f"{run.name}: unloaded interactive ({args.unloaded_clients} clients) p50 {_ms(u50)} ms "
                         f"p99 {_ms(u99)} ms (failed {ufail})")
    u99 = pg.unloaded[1]
    for run in runs:
        assert run.stats is not None
        lines.append(f"{run.name}: open loop {run.stats.rate:.1f} req/s ({run.stats.rate / pg.capacity.rps:.1f}x "
                     f"peakgate capacity) for {run.stats.duration_s:.0f} s; "
                     f"client lag max {run.stats.lag_s * 1000:.0f} ms")
        lines += class_table(run)
    lines.append("")
    lines.append(f"{'':<44}{'peakgate':>12}" + "".join(f"{r.name:>12}" for r in runs[1:])
                 + ("   peakgate/naive" if len(runs) > 1 else ""))

    def row(label: str, values: Sequence[float], fmt: str = "{:.1f}") -> str:
        cells = "".join(f"{'-' if math.isnan(v) else fmt.format(v):>12}" for v in values)
        ratio = ""
        if len(values) > 1:
            ratio = f"   {values[0] / values[1]:.2f}x" if values[1] and not math.isnan(values[1]) else "   n/a"
        return f"{label:<44}{cells}{ratio}"

    stats = [r.stats for r in runs]
    assert all(s is not None for s in stats)
    good = [s.goodput_sps for s in stats if s is not None]
    lines.append(row("goodput, accepted segments/s in window", good))
    lines.append(row("goodput / peakgate capacity (goal >= 0.95)", [g / pg.capacity.sps for g in good], "{:.2f}"))
    lines.append(row("goodput / own capacity", [g / r.capacity.sps for g, r in zip(good, runs, strict=True)],
                     "{:.2f}"))
    # Congestion collapse shows as engine work nobody receives (decoded, then past its deadline or its client);
    # the naive server exports no counts.
    lines.append(row("accepted segments / segments the engines ran",
                     [s.accepted_segments_total / s.decoded_segments if s.decoded_segments else math.nan
                      for s in stats if s is not None], "{:.2f}"))
    lines.append(row("accepted requests/s in window", [s.goodput_rps for s in stats if s is not None]))
    inter = [percentile(s.classes["interactive"].latencies_s, 0.99) for s in stats if s is not None]
    lines.append(row("interactive p99 ms (accepted)", [v * 1000 for v in inter], "{:.0f}"))
    lines.append(row("interactive p99 / unloaded p99 (goal <= 2)", [v / u99 for v in inter], "{:.2f}"))
    for klass in CLASSES:
        lines.append(row(f"{klass} accepted / offered",
                         [s.classes[klass].accepted / max(1, s.classes[klass].offered) for s in stats if s is not None],
                         "{:.2f}"))
    lines.append(row("lost (no answer, no rejection; goal 0)", [s.total.lost for s in stats if s is not None],
                     "{:.0f}"))
    lines.append(row("rejected without Retry-After (BUG if > 0)",
                     [s.total.rejected_no_retry_after for s in stats if s is not None], "{:.0f}"))
    lines.append(row("not sent (client in-flight cap)", [s.total.not_sent for s in stats if s is not None], "{:.0f}"))
    verdicts = [
        ("interactive p99 <= 2x unloaded", inter[0] <= 2 * u99),
        ("goodput >= 95% of capacity", good[0] >= 0.95 * pg.capacity.sps),
        ("0 accepted requests lost", pg.stats.total.lost == 0),
        ("every 429/503 has Retry-After", pg.stats.total.rejected_no_retry_after == 0),
    ]
    if pg.recovery is not None:
        lines += recovery_lines(pg.recovery, args.recovery_load, DEFAULT_DEADLINES_S)
        interactive = next(r for r in pg.recovery if r.klass == "interactive")
        verdicts.append(("interactive recovers within its deadline", interactive.recovered_s is not None
                         and interactive.recovered_s <= DEFAULT_DEADLINES_S["interactive"]))
    if not pg.stats.total.rejected and not pg.stats.total.rejected_no_retry_after:
        lines.append("NOTE: peakgate rejected nothing at this load: its shedding is not wired (or not reached)")
    lines.append("peakgate goals: " + "; ".join(f"{name}: {'PASS' if ok else 'FAIL'}" for name, ok in verdicts))
    return lines


def run(config: dict[str, object], sentences: Sequence[str], args: argparse.Namespace) -> list[str]:
    runs = [measure_peakgate(config, sentences, args)]
    if args.naive:
        assert runs[0].stats is not None
        runs.append(measure_naive(sentences, args, runs[0].stats.rate))
    return report(runs, args)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--load", type=float, default=10.0, help="offered rate as a multiple of measured capacity")
    p.add_argument("--duration", type=float, default=20.0, help="seconds of open-loop arrivals")
    p.add_argument("--capacity-s", type=float, default=10.0, help="seconds of the closed-loop capacity run")
    p.add_argument("--clients", type=int, default=16, help="closed-loop clients for capacity")
    p.add_argument("--unloaded-clients", type=int, default=4)
    p.add_argument("--unloaded-requests", type=int, default=1000, help="enough for a p99 that is not the maximum")
    p.add_argument("--grace-s", type=float, default=0.5, help="client timeout = class deadline + this")
    p.add_argument("--max-inflight", type=int, default=6000, help="client cap on open requests")
    p.add_argument("--recovery-load", type=float, default=0.5, help="offered rate after the surge, x capacity")
    p.add_argument("--recovery-s", type=float, default=20.0, help="seconds of the recovery phase (0: none)")
    p.add_argument("--seed", type=int, default=11)
    p.add_argument("--model", default=MODEL)
    p.add_argument("--no-naive", dest="naive", action="store_false", help="skip the naive FIFO server")
    p.add_argument("--embedded-default", action="store_true",
                   help="serve the embedded default (every model and tier, so the ladder can step down to the "
                        "tiny tier) instead of --model alone")
    p.add_argument("--override", type=json.loads, default={}, metavar="JSON",
                   help='top-level config keys laid over the served config, e.g. {"batcher": {...}}')
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    sentences = list(dict.fromkeys(row.en for row in load_dev(default_dev_path())))
    print(f"cpus={os.cpu_count()} model={args.model} load={args.load}x duration={args.duration}s "
          f"mix={DEFAULT_MIX} deadlines_s={DEFAULT_DEADLINES_S} (+{args.grace_s} s client grace)", flush=True)
    config = ({} if args.embedded_default else model_config(args.model)) | args.override
    for line in run(config, sentences, args):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
