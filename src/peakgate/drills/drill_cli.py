"""`peakgate drill`: a surge with faults injected at set times, the promises checked, a drill record written.

    peakgate drill --fault kill-pipeline@20s [--fault stall-pipeline@40s:5s ...] [--profile holiday-5x|FILE]
                   [--duration 2m] [--baseline-rps R] [--target URL --pid PID | --config FILE] [--out docs/drills]

Without `--target` it starts `peakgate serve` on 127.0.0.1 and stops it afterwards. It stops by itself after the
profile's duration plus at most `--drain-s`. Exit code 0 when every promise held, 1 when one failed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from dataclasses import dataclass
from pathlib import Path

from peakgate.clock import Clock, MonotonicClock
from peakgate.drills import drill_promises as dp
from peakgate.drills import session
from peakgate.drills.args import positive_arg, seconds_arg
from peakgate.drills.drill_record import DrillRecord, write_record
from peakgate.drills.faults import FAULT_KINDS, Fault, FaultEvent, Injector, Targets, parse_fault, plan
from peakgate.drills.profile import BUILTIN, SurgeProfile
from peakgate.drills.records import RunResult
from peakgate.drills.served import UPSTREAM_MODEL
from peakgate.drills.summary import summarize
from peakgate.drills.surge_cli import prepare
from peakgate.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--fault", type=parse_fault, action="append", required=True, metavar="KIND@AT[:FOR]",
                        help=f"one of {', '.join(FAULT_KINDS)} at a time, e.g. kill-pipeline@20s, "
                        "stall-pipeline@40s:5s, stop-redis@60s:5s; repeat for several")
    parser.add_argument("--profile", default="holiday-5x",
                        help=f"{' | '.join(BUILTIN)} | a TOML or JSON profile file (default holiday-5x)")
    parser.add_argument("--duration", type=seconds_arg, help="arrival window (the profile's phases scaled to it)")
    parser.add_argument("--baseline-rps", type=positive_arg, help="override the profile's baseline rate (req/s)")
    parser.add_argument("--engine-match", default="eng-spa",
                        help="a pipeline to fault is a child whose command line contains this (default eng-spa, "
                        "the Apertium mode the surge's EN->ES traffic uses)")
    parser.add_argument("--recovery-s", type=positive_arg, default=30.0,
                        help="promise: served again (and a killed pipeline replaced) within this long (default 30)")
    parser.add_argument("--out", type=Path, default=Path("docs/drills"), help="record folder (default docs/drills)")
    parser.add_argument("--workers", type=int, default=0,
                        help="scale-out: start Redis and this many `peakgate worker`s behind the gateway (the "
                        "kill-worker and stop-redis faults need it, or --worker-pid / --redis-pid with --target)")
    parser.add_argument("--worker-pid", type=int, action="append", help="with --target: a worker's process id")
    parser.add_argument("--redis-pid", type=int, help="with --target: the queue's redis-server process id")
    session.add_arguments(parser)


def run(args: argparse.Namespace) -> int:
    session.check(args)
    _check(args)
    profile = prepare(args)
    faults = plan(args.fault, profile.phases.total_s)
    print(f"drill {profile.name}: {', '.join(map(str, faults))} over {profile.phases.total_s:.0f} s "
          f"({profile.baseline_rps:g} -> {profile.peak_rps:g} req/s)", file=sys.stderr)
    load_at_start = session.load_averages()
    outcome = asyncio.run(_drill(args, profile, faults, MonotonicClock()))
    record = evaluate(outcome, profile, faults, args.recovery_s, machine=session.machine(load_at_start),
                      note=args.note)
    written = write_record(record, args.out)
    for promise in record.promises:
        print(f"{'PASS' if promise.passed else 'FAIL'}  {promise.name}: {promise.detail}")
    print(f"drill {'PASS' if record.passed else 'FAIL'}; record: {' '.join(map(str, written))}")
    return 0 if record.passed else 1


def _check(args: argparse.Namespace) -> None:
    """Refuse a drill whose faults could hit nothing, before anything starts."""
    if args.target is not None and args.pid is None:
        raise ConfigError("faults need the gateway's process: give --pid with --target")
    if args.target is None and (args.worker_pid or args.redis_pid is not None):
        raise ConfigError("--worker-pid and --redis-pid go with --target: a deployment started here is known")
    if args.workers and (args.target is not None or args.config is not None):
        raise ConfigError("--workers starts its own deployment: not with --target or --config")
    if not 0 <= args.workers <= 8:
        raise ConfigError(f"--workers {args.workers}: between 0 and 8 on one machine")
    kinds = {f.kind for f in args.fault}
    has_workers = args.workers >= 2 or len(args.worker_pid or ()) >= 2
    if "kill-worker" in kinds and not has_workers:
        raise ConfigError("kill-worker needs at least two workers (--workers 2, or --worker-pid twice), or "
                          "nobody is left to take its work over")
    if "stop-redis" in kinds and not (args.workers or args.redis_pid is not None):
        raise ConfigError("stop-redis needs a scale-out deployment: --workers N, or --redis-pid with --target")
    if "fail-upstream" in kinds and (args.target is not None or args.config is not None or args.workers):
        raise ConfigError("fail-upstream fails the drill's own upstream, which only the drill's own gateway uses: "
                          "not with --target, --config or --workers")


@dataclass(frozen=True, slots=True)
class Outcome:
    result: RunResult
    events: list[FaultEvent]


async def _drill(args: argparse.Namespace, profile: SurgeProfile, faults: list[Fault], clock: Clock) -> Outcome:
    given = Targets(args.pid, tuple(args.worker_pid or ()), args.redis_pid) if args.pid is not None else None
    upstream = any(f.kind == "fail-upstream" for f in faults)
    async with session.gateway(args, clock, workers=args.workers, given=given, upstream=upstream) as gw:
        assert gw.targets is not None  # _check refused --target without --pid
        injector = Injector(gw.targets, clock, match=args.engine_match, watch_s=args.recovery_s)
        start = clock.now()
        result, events = await asyncio.gather(session.surge(gw.url, profile, clock, args),
                                              injector.run(faults, start))
    for event in events:
        print(f"  {event.fault}: {event.outcome}", file=sys.stderr)
    return Outcome(result, events)


def evaluate(outcome: Outcome, profile: SurgeProfile, faults: list[Fault], recovery_s: float, *,
             machine: dict[str, object], note: str | None) -> DrillRecord:
    """Split the records at the first fault and at recovery (served again after the last fault was over)."""
    records = outcome.result.records
    fault_at = faults[0].at_s
    over_at = max(e.ended_s for e in outcome.events)
    recovered_at = dp.recovery_at(records, over_at, profile.deadline_s)
    phases = dp.figures(records, fault_at, recovered_at)
    promises = [
        dp.faults_injected(outcome.events),
        dp.killed_pipelines_replaced(outcome.events, recovery_s),
        dp.accepted_jobs_not_lost(records),
        dp.refusals_have_retry_after(records),
        dp.no_server_errors(records),
        dp.recovered(recovered_at, over_at, recovery_s),
        dp.after_p99_within(phases, profile.deadline_s),
        *dp.upstream_promises(outcome.events, records, outcome.result.samples, UPSTREAM_MODEL),
    ]
    summary = summarize(outcome.result, profile)
    line, server = summary["timeline"], summary["timeline"]["server"]
    load = {"target": outcome.result.target, "profile": profile.name, "baseline_rps": profile.baseline_rps,
            "peak_rps": profile.peak_rps, "duration_s": round(profile.phases.total_s, 1),
            "classes": summary["classes"],
            # Per second of arrival (every class) and per scrape: when the refusals came, against the faults.
            "per_second": {k: line[k] for k in ("t_s", "offered", "accepted", "shed", "errors")},
            "server": {k: server[k] for k in ("t_s", "degradation", "queue", "workers")}}
    if any(f.kind == "fail-upstream" for f in faults):  # its breaker's state at each scrape, beside the others
        load["server"]["upstream_breaker"] = [s.breakers.get(UPSTREAM_MODEL, dp.CLOSED)
                                              for s in outcome.result.samples]
    scenario = "+".join(dict.fromkeys(f.kind for f in faults))
    return DrillRecord(scenario, outcome.result.started_at, fault_at, recovered_at, phases, promises,
                       outcome.events, machine, load, note)
