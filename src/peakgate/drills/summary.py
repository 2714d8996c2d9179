"""The JSON summary of a surge run: counts that add up, percentiles, goodput, per phase and per second.

Every arrival is exactly one of accepted (2xx), shed (429/503), error (any other status, a timeout, a failed
connection, cancelled at the drain's end) or generator-dropped; `checks.counts_add_up` says so per kind.
Latencies count from the scheduled arrival, so time spent waiting to be sent is the server's delay too.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from peakgate.drills.arrivals import expected_count
from peakgate.drills.profile import KINDS, SurgeProfile
from peakgate.drills.records import DROPPED, Record, RunResult, outcome_name
from peakgate.drills.scrape import Sample

CLASSES = ("interactive", "document", "batch")


def percentile(values: Sequence[float], q: float) -> float | None:
    """Nearest rank; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(q * len(ordered)) - 1)]


def figures(records: Iterable[Record], deadline_s: float, seconds: float) -> dict[str, Any]:
    rows = list(records)
    offered = len(rows)
    accepted = [r for r in rows if r.accepted]
    latencies = [r.latency_s for r in accepted if r.latency_s is not None]
    statuses = Counter(r.status for r in rows if r.status is not None)
    dropped = statuses.pop(DROPPED, 0)
    shed_429, shed_503 = statuses.pop(429, 0), statuses.pop(503, 0)
    errors = Counter({outcome_name(s): n for s, n in statuses.items() if not 200 <= s < 300})
    good = sum(1 for lat in latencies if lat <= deadline_s)
    return {
        "offered": offered, "accepted": len(accepted), "shed_429": shed_429, "shed_503": shed_503,
        "shed": shed_429 + shed_503, "errors": sum(errors.values()), "errors_by_outcome": dict(errors),
        "generator_dropped": dropped,
        "shed_rate": _share(shed_429 + shed_503, offered),
        "p50_s": percentile(latencies, 0.50), "p95_s": percentile(latencies, 0.95),
        "p99_s": percentile(latencies, 0.99),
        "goodput": good, "goodput_rps": good / seconds if seconds > 0 else None, "goodput_share": _share(good, offered),
        "degraded_answers": sum(1 for r in accepted if r.degraded),
    }


def _share(part: int, whole: int) -> float | None:
    return part / whole if whole else None


def adds_up(f: dict[str, Any]) -> bool:
    return bool(f["offered"] == f["accepted"] + f["shed"] + f["errors"] + f["generator_dropped"])


def summarize(result: RunResult, profile: SurgeProfile) -> dict[str, Any]:
    records, deadline, duration = result.records, profile.deadline_s, result.duration_s
    kinds = {k: figures((r for r in records if r.kind == k), deadline, duration) for k in KINDS}
    classes = {c: figures((r for r in records if r.klass == c), deadline, duration) for c in CLASSES}
    total = figures(records, deadline, duration)
    refusals = _refusals(result)
    return {
        "target": result.target, "seed": result.seed, "started_at": result.started_at,
        "profile": _profile_block(profile),
        "duration_s": duration, "drain_s": result.drain_s, "ended_s": round(result.ended_s, 3),
        "generator": {"max_lag_s": round(result.max_lag_s, 4), "dropped": total["generator_dropped"]},
        "total": total, "kinds": kinds, "classes": classes,
        "phases": _phases(records, profile),
        "refusals": refusals,
        "jobs": {k: _jobs(r for r in records if r.kind == k) for k in ("document", "batch")}
        | {"sample_every": result.job_sample_every},
        "server": _server(result),
        "checks": {"counts_add_up": adds_up(total) and all(adds_up(f) for f in kinds.values()),
                   "all_refusals_had_retry_after": refusals["without_retry_after"] == 0,
                   "generator_kept_up": result.max_lag_s < 0.5 and total["generator_dropped"] == 0},
        "timeline": timeline(result, profile),
    }


def _profile_block(p: SurgeProfile) -> dict[str, Any]:
    return {"name": p.name, "baseline_rps": p.baseline_rps, "multiplier": p.multiplier, "peak_rps": p.peak_rps,
            "phases": p.phases.model_dump(), "mix": p.mix.model_dump(), "tenants": [t.name for t in p.tenants],
            "zipf_exponent": p.zipf_exponent, "phrase_pool": p.phrase_pool, "deadline_s": p.deadline_s}


def _phases(records: Sequence[Record], profile: SurgeProfile) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, start, end in profile.phases.spans():
        if end <= start:
            continue
        mine = [r for r in records if r.phase == name]
        block = figures(mine, profile.deadline_s, end - start)
        block |= {"start_s": start, "end_s": end, "offered_rps": len(mine) / (end - start),
                  "expected_offered": round(expected_count(profile, start, end), 1),
                  "kinds": {k: _latency_block(r for r in mine if r.kind == k) for k in KINDS}}
        out[name] = block
    return out


def _latency_block(records: Iterable[Record]) -> dict[str, Any]:
    rows = list(records)
    latencies = [r.latency_s for r in rows if r.accepted and r.latency_s is not None]
    return {"offered": len(rows), "accepted": len(latencies), "shed": sum(1 for r in rows if r.shed),
            "p50_s": percentile(latencies, 0.5), "p99_s": percentile(latencies, 0.99)}


def _refusals(result: RunResult) -> dict[str, int]:
    """Every 429/503 seen, arrivals and job polls together, and how many lacked Retry-After."""
    shed = [r for r in result.records if r.shed]
    total = len(shed) + result.followups.refusals
    hinted = sum(1 for r in shed if r.retry_after) + result.followups.refusals_with_retry_after
    return {"total": total, "with_retry_after": hinted, "without_retry_after": total - hinted,
            "poll_refusals": result.followups.refusals, "polls": result.followups.polls,
            "poll_errors": result.followups.errors}


def _jobs(records: Iterable[Record]) -> dict[str, Any]:
    accepted = [r for r in records if r.accepted]
    states = Counter(r.job or "pending" for r in accepted)
    done = [r.job_s for r in accepted if r.job == "done" and r.job_s is not None]
    return {"accepted": len(accepted), **{s: states.get(s, 0) for s in ("done", "error", "pending", "untracked")},
            "done_p50_s": percentile(done, 0.5), "done_p99_s": percentile(done, 0.99)}


def _server(result: RunResult) -> dict[str, Any]:
    samples = result.samples
    first, last = (samples[0], samples[-1]) if samples else (None, None)
    levels = [s.degradation for s in samples if s.degradation is not None]
    hits = served = None
    if first and last and first.served is not None and last.served is not None:
        served = last.served - first.served
        hits = (last.hits or 0.0) - (first.hits or 0.0)
    before = first.rejected if first else {}
    rejected = {k: v - before.get(k, 0.0) for k, v in (last.rejected if last else {}).items()}
    return {"samples": len(samples), "scrape_failures": result.scrape_failures,
            "max_degradation": max(levels) if levels else None,
            "segments_served": served, "hit_rate": hits / served if hits is not None and served else None,
            "rejected_by_reason": {k: v for k, v in sorted(rejected.items()) if v > 0},
            "max_queue": max((s.queue for s in samples if s.queue is not None), default=None),
            "workers": sorted({s.workers for s in samples if s.workers is not None}) or None}


def timeline(result: RunResult, profile: SurgeProfile, bin_s: float = 1.0) -> dict[str, Any]:
    """Per second of arrivals (offered, outcomes, latency per kind) and per server sample."""
    bins = max(1, math.ceil(result.duration_s / bin_s))
    by_bin: list[list[Record]] = [[] for _ in range(bins)]
    for r in result.records:
        by_bin[min(bins - 1, int(r.at_s // bin_s))].append(r)
    per_kind: dict[str, dict[str, list[float | None]]] = {k: {"p50_s": [], "p99_s": []} for k in KINDS}
    for rows in by_bin:
        for k in KINDS:
            block = _latency_block(r for r in rows if r.kind == k)
            per_kind[k]["p50_s"].append(block["p50_s"])
            per_kind[k]["p99_s"].append(block["p99_s"])
    return {
        "bin_s": bin_s, "t_s": [i * bin_s for i in range(bins)],
        "profile_rps": [profile.rate_at((i + 0.5) * bin_s) for i in range(bins)],
        "offered": [len(rows) for rows in by_bin],
        "accepted": [sum(r.accepted for r in rows) for rows in by_bin],
        "shed": [sum(r.shed for r in rows) for rows in by_bin],
        "errors": [sum(not (r.accepted or r.shed or r.status == DROPPED) for r in rows) for rows in by_bin],
        "kinds": per_kind,
        "server": _server_series(result),
    }


def _server_series(result: RunResult) -> dict[str, list[float | None]]:
    samples = result.samples
    hit_rate = [None, *(_interval_hit_rate(before, after) for before, after in itertools.pairwise(samples))]
    return {"t_s": [round(s.t_s, 3) for s in samples], "degradation": [s.degradation for s in samples],
            "queue": [s.queue for s in samples], "workers": [s.workers for s in samples],
            "hit_rate": hit_rate[: len(samples)]}


def _interval_hit_rate(before: Sample, after: Sample) -> float | None:
    """Share of the segments served between two samples that no engine translated."""
    if before.served is None or after.served is None or before.hits is None or after.hits is None:
        return None
    served = after.served - before.served
    return (after.hits - before.hits) / served if served > 0 else None
