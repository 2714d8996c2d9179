"""`peakgate surge`: an open-loop surge against one running deployment, then a report.

    peakgate surge --target URL [--profile holiday-5x|holiday-10x|FILE] [--duration 150s|2.5m]
                   [--baseline-rps R] [--seed N] [--out DIR] [--drain-s S] [--max-outstanding N] [--note TEXT]

Sends only to `--target` (its origin: every request is a path on it), stops by itself after the profile's
duration (or `--duration`, which stretches or shrinks the phases) plus at most `--drain-s` for answers and job
polls, then writes DIR/<profile>.md, .json and three PNGs.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import sys
from collections.abc import Callable
from pathlib import Path

from tqdm import tqdm

from peakgate.clock import MonotonicClock
from peakgate.drills import report
from peakgate.drills.args import positive_arg, seconds_arg
from peakgate.drills.arrivals import schedule
from peakgate.drills.http import Origin, OriginClient
from peakgate.drills.mix import Planned, Planner
from peakgate.drills.profile import BUILTIN, SurgeProfile, load_profile
from peakgate.drills.records import Progress, RunResult
from peakgate.drills.runner import Runner
from peakgate.drills.summary import summarize


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--target", required=True, help="the deployment's base URL, e.g. http://127.0.0.1:8080; "
                        "nothing else is ever contacted")
    parser.add_argument("--profile", default="holiday-10x",
                        help=f"{' | '.join(BUILTIN)} | a TOML or JSON profile file (default holiday-10x)")
    parser.add_argument("--duration", type=seconds_arg, help="arrival window (the profile's phases scaled to it)")
    parser.add_argument("--baseline-rps", type=positive_arg, help="override the profile's baseline rate (req/s)")
    parser.add_argument("--seed", type=int, default=0, help="fixes arrivals, mix and texts (default 0)")
    parser.add_argument("--out", type=Path, default=Path("surge-report"), help="report folder (default surge-report)")
    parser.add_argument("--drain-s", type=positive_arg, default=30.0,
                        help="after the window, at most this long for answers and job polls (default 30)")
    parser.add_argument("--max-outstanding", type=int, default=4000,
                        help="the generator's cap on unanswered requests; past it arrivals are counted as "
                        "generator-dropped (default 4000)")
    parser.add_argument("--note", help="a line for the report (the machine, what else ran)")
    parser.add_argument("--quiet", action="store_true", help="no progress line")


def prepare(args: argparse.Namespace) -> SurgeProfile:
    profile = load_profile(args.profile)
    if args.baseline_rps is not None:
        profile = SurgeProfile.model_validate(profile.model_dump() | {"baseline_rps": args.baseline_rps})
    if args.duration is not None:
        profile = profile.with_duration(args.duration)
    return profile


def run(args: argparse.Namespace) -> int:
    profile = prepare(args)
    origin = Origin.parse(args.target)  # before anything is sent: a bad URL sends nothing
    planner = Planner(profile, args.seed)
    plans = [planner.plan(a) for a in schedule(profile, args.seed)]
    # The plans live for the whole run: out of the collector's sight, its full passes stay short (a long
    # pause in the generator would read as server latency on every request in flight).
    gc.collect()
    gc.freeze()
    quiet = args.quiet or not sys.stderr.isatty()
    print(f"surge {profile.name}: {len(plans):,} arrivals over {profile.phases.total_s:.0f} s "
          f"({profile.baseline_rps:g} → {profile.peak_rps:g} req/s) against {origin.url}", file=sys.stderr)
    with tqdm(total=round(profile.phases.total_s + args.drain_s), unit="s", disable=quiet, file=sys.stderr,
              bar_format="{desc} {bar:20} {n:.0f}/{total:.0f} s {postfix}") as bar:
        result = asyncio.run(_run(origin, plans, profile, args, lambda p: _show(bar, p)))
    summary = summarize(result, profile)
    written = report.write(summary, args.out, args.note)
    print(report.headline_text(summary))
    print(f"report: {written.markdown}  summary: {written.summary}")
    return 0


async def _run(origin: Origin, plans: list[Planned], profile: SurgeProfile, args: argparse.Namespace,
               on_tick: Callable[[Progress], object]) -> RunResult:
    client = OriginClient(origin)
    runner = Runner(client, plans, profile, MonotonicClock(), target=origin.url, seed=args.seed,
                    max_outstanding=args.max_outstanding, drain_s=args.drain_s, on_tick=on_tick)
    try:
        return await runner.run()
    finally:
        await client.close()


def _show(bar: tqdm, progress: Progress) -> None:
    t = progress.tally
    p99 = "–" if progress.p99_s is None else f"{progress.p99_s * 1000:.0f} ms"
    bar.set_description_str(f"offered {progress.offered_rps:5.0f}/s", refresh=False)
    bar.set_postfix_str(f"sent {t.offered:,} ok {t.accepted:,} shed {t.shed:,} err {t.errors:,} "
                        f"dropped {t.dropped:,} interactive p99 {p99}", refresh=False)
    bar.update(max(0, round(progress.elapsed_s) - bar.n))
