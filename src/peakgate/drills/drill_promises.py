"""The promises a fault drill checks, from a surge's records: pure, so each is tested on hand-made records.

A drill injects a fault at `fault_at_s` (seconds from the surge's start); records are split into the phases
before / during / after it, and the promises are checked over all of them. A `fail-upstream` fault adds two,
one read from the gateway's own /metrics scrapes (its breaker for the upstream model).
"""

from __future__ import annotations

from dataclasses import dataclass

from peakgate.drills.faults import FaultEvent
from peakgate.drills.records import DROPPED, Record
from peakgate.drills.scrape import Sample

SERVER_ERROR = 500
CLOSED = "closed"
SCRAPE_SLACK_S = 2.0  # the gateway is scraped once a second: a change shows up to a scrape (and its answer) late


@dataclass(frozen=True, slots=True)
class Promise:
    name: str
    passed: bool
    detail: str


@dataclass(frozen=True, slots=True)
class PhaseFigures:
    phase: str
    offered: int
    accepted: int
    availability: float | None  # accepted / answered interactive requests; None without any
    p99_s: float | None  # interactive accepted latency


def phase_of(at_s: float, fault_at_s: float, recovered_at_s: float | None) -> str:
    if at_s < fault_at_s:
        return "before"
    if recovered_at_s is None or at_s < recovered_at_s:
        return "during"
    return "after"


def p99(values: list[float]) -> float | None:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else None


def figures(records: list[Record], fault_at_s: float, recovered_at_s: float | None) -> list[PhaseFigures]:
    out = []
    for phase in ("before", "during", "after"):
        mine = [r for r in records if r.klass == "interactive" and r.status != DROPPED
                and phase_of(r.at_s, fault_at_s, recovered_at_s) == phase]
        accepted = [r for r in mine if r.accepted]
        latencies = [r.latency_s for r in accepted if r.latency_s is not None]
        out.append(PhaseFigures(phase, len(mine), len(accepted),
                                len(accepted) / len(mine) if mine else None, p99(latencies)))
    return out


def refusals_have_retry_after(records: list[Record]) -> Promise:
    bare = [r.index for r in records if r.shed and not r.retry_after]
    return Promise("every refusal (429/503) had Retry-After", not bare,
                   f"{len(bare)} without it, e.g. #{bare[:5]}" if bare else "all did")


def no_server_errors(records: list[Record]) -> Promise:
    # A 503 with Retry-After is a designed refusal; any other 5xx is a failure the client cannot act on.
    bad = [r.index for r in records if r.status is not None and r.status >= SERVER_ERROR and not r.shed]
    return Promise("no 5xx other than 503", not bad, f"{len(bad)} errors, e.g. #{bad[:5]}" if bad else "none")


def accepted_jobs_not_lost(records: list[Record]) -> Promise:
    # 'pending' means the drain ended first (still owned by the server); 'error' or a missing state is loss.
    lost = [r.index for r in records if r.accepted and r.job is not None
            and r.job not in ("done", "pending", "untracked")]
    return Promise("accepted jobs not lost", not lost, f"{len(lost)} lost, e.g. #{lost[:5]}" if lost else "none lost")


def recovered(recovered_at_s: float | None, fault_at_s: float, within_s: float) -> Promise:
    if recovered_at_s is None:
        return Promise(f"recovered within {within_s:g} s", False, "never recovered during the run")
    took = recovered_at_s - fault_at_s
    return Promise(f"recovered within {within_s:g} s", took <= within_s, f"after {took:.1f} s")


def after_p99_within(phases: list[PhaseFigures], bound_s: float) -> Promise:
    after = next(p for p in phases if p.phase == "after")
    ok = after.p99_s is not None and after.p99_s <= bound_s
    shown = "no answers" if after.p99_s is None else f"{after.p99_s * 1000:.0f} ms"
    return Promise(f"interactive p99 after recovery <= {bound_s * 1000:.0f} ms", ok, shown)


def recovery_at(records: list[Record], from_s: float, deadline_s: float, *, window_s: float = 2.0,
                min_availability: float = 0.95) -> float | None:
    """The start of the first `window_s` window from `from_s` whose interactive arrivals were served again: at
    least `min_availability` of them accepted, their p99 within `deadline_s`. None if no window was."""
    mine = sorted((r for r in records if r.klass == "interactive" and r.status != DROPPED and r.at_s >= from_s),
                  key=lambda r: r.at_s)
    if not mine:
        return None
    for step in range(int((mine[-1].at_s - from_s) / window_s) + 1):
        start = from_s + step * window_s
        window = [r for r in mine if start <= r.at_s < start + window_s]
        accepted = [r.latency_s for r in window if r.accepted and r.latency_s is not None]
        worst = p99(accepted)
        if window and len(accepted) >= min_availability * len(window) and worst is not None and worst <= deadline_s:
            return start
    return None


def faults_injected(events: list[FaultEvent]) -> Promise:
    # The drill's own validity: a fault that hit nothing proves nothing about the gateway.
    missed = [e.fault for e in events if e.target_pid is None]
    return Promise("every fault was injected", not missed, f"missed: {', '.join(missed)}" if missed else
                   ", ".join(e.fault for e in events))


def killed_pipelines_replaced(events: list[FaultEvent], within_s: float) -> Promise:
    kills = [e for e in events if e.kind == "kill-pipeline" and e.target_pid is not None]
    late = [e.fault for e in kills if e.replaced_after_s is None or e.replaced_after_s > within_s]
    detail = "; ".join(e.outcome for e in kills) or "no kill in this drill"
    return Promise(f"every killed pipeline replaced within {within_s:g} s", not late, detail)


def upstream_promises(events: list[FaultEvent], records: list[Record], samples: list[Sample],
                      model: str) -> list[Promise]:
    """For each `fail-upstream` fault that hit: its window's requests answered, the upstream's breaker cycled."""
    out = []
    for event in events:
        if event.kind == "fail-upstream" and event.target_pid is not None:
            out += [answered_during(records, event.at_s, event.ended_s),
                    breaker_cycled(samples, model, event.at_s, event.ended_s)]
    return out


def answered_during(records: list[Record], from_s: float, to_s: float) -> Promise:
    """Arrivals while the upstream failed were served by the tier's fallbacks or refused with Retry-After."""
    mine = [r for r in records if from_s <= r.at_s < to_s and r.status != DROPPED]
    served = sum(r.accepted for r in mine)
    refused = sum(r.shed and r.retry_after for r in mine)
    failed = [r.index for r in mine if not r.accepted and not (r.shed and r.retry_after)]
    detail = f"{len(mine)} arrivals: {served} served, {refused} refused with Retry-After, {len(failed)} failed"
    return Promise("while the upstream failed: served by a fallback or refused with Retry-After",
                   bool(mine) and not failed, detail + (f", e.g. #{failed[:5]}" if failed else ""))


def breaker_cycled(samples: list[Sample], model: str, fault_at_s: float, over_at_s: float) -> Promise:
    """`model`'s breaker opened during its fault and was closed again after it, by the gateway's /metrics."""
    name = f"{model}'s breaker opened during the fault and closed after it"
    before = [s.breaker_opens.get(model, 0.0) for s in samples if s.t_s < fault_at_s]
    baseline = before[-1] if before else 0.0
    opened = [s for s in samples if fault_at_s <= s.t_s <= over_at_s + SCRAPE_SLACK_S
              and s.breaker_opens.get(model, 0.0) > baseline]
    if not opened:
        return Promise(name, False, "it never opened (no open transition in the scrapes)")
    opens = max(s.breaker_opens[model] for s in opened) - baseline
    closed = next((s for s in samples if s.t_s >= over_at_s and s.breakers.get(model, CLOSED) == CLOSED), None)
    last = samples[-1]
    seen = f"opened {opens:g} time(s) from {opened[0].t_s:.1f} s"
    if closed is None or last.breakers.get(model, CLOSED) != CLOSED:
        state = last.breakers.get(model, CLOSED)
        return Promise(name, False, f"{seen}; still {state} at the last scrape ({last.t_s:.1f} s)")
    return Promise(name, True, f"{seen}; closed again by {closed.t_s:.1f} s, "
                   f"{closed.t_s - over_at_s:.1f} s after the fault ended")
