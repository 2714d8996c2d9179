"""`peakgate soak`: steady open-loop load for a chosen time, sampling the gateway's memory, open files, CPU and its
engines' memory, then the growth slope and a verdict (soak_analysis) in a report.

    peakgate soak [--duration 10m] [--rps 10] [--sample-s 5] [--target URL [--pid PID] | --config FILE]
                  [--out docs/soak] [--horizon-h 8] [--min-span-s 180]

The load is `peakgate surge`'s mix at one flat rate. A leak of a few MB an hour hides in minutes of noise: the
seed's showed only after 8 hours, so the slope is projected over `--horizon-h` and a short run is usually
INCONCLUSIVE, never a PASS nobody should trust. Exit code 1 on FAIL, else 0.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from peakgate.clock import Clock, MonotonicClock
from peakgate.drills import session, soak_report
from peakgate.drills.args import positive_arg, seconds_arg
from peakgate.drills.faults import Targets
from peakgate.drills.http import Origin, OriginClient
from peakgate.drills.profile import Phases, SurgeProfile
from peakgate.drills.records import RunResult
from peakgate.drills.soak_analysis import Sample, SoakThresholds, analyse
from peakgate.drills.soak_probe import parse_process_metrics, read_tree
from peakgate.drills.summary import summarize
from peakgate.drills.wire import Call
from peakgate.errors import PeakgateError

_METRICS = Call("GET", "/metrics", ())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--duration", type=seconds_arg, default=600.0, help="how long the load runs (default 10m)")
    parser.add_argument("--rps", type=positive_arg, default=10.0, help="the steady offered rate, req/s (default 10)")
    parser.add_argument("--sample-s", type=positive_arg, default=5.0, help="seconds between samples (default 5)")
    parser.add_argument("--horizon-h", type=positive_arg, default=8.0,
                        help="project the growth over this many hours for the verdict (default 8)")
    parser.add_argument("--min-span-s", type=positive_arg, default=180.0,
                        help="a verdict needs the samples after warm-up to span this long, else INCONCLUSIVE "
                        "(default 180)")
    parser.add_argument("--out", type=Path, default=Path("docs/soak"), help="report folder (default docs/soak)")
    session.add_arguments(parser)


def soak_profile(rps: float, duration_s: float) -> SurgeProfile:
    """The surge mix at one rate: a baseline only, no peak."""
    return SurgeProfile(name="soak", baseline_rps=rps, multiplier=1.0,
                        phases=Phases(baseline_s=duration_s, ramp_s=0.0, hold_s=0.0, decay_s=0.0))


@dataclass(frozen=True, slots=True)
class Point:
    t_s: float
    rss_bytes: float | None  # the gateway process
    open_fds: float | None
    cpu_s: float | None  # cumulative
    engine_rss_bytes: float | None  # its children together (None: no --pid for a remote gateway)
    tree_fds: float | None  # the gateway and its children


class Sampler:
    """Every `every_s`: the gateway's process figures from /metrics, its process tree from /proc when local."""

    def __init__(self, url: str, pid: int | None, clock: Clock, every_s: float) -> None:
        self._client = OriginClient(Origin.parse(url))
        self._pid, self._clock, self._every_s = pid, clock, every_s
        self.points: list[Point] = []

    async def run(self, start: float, horizon_s: float) -> None:
        try:
            for _ in range(math.ceil(horizon_s / self._every_s) + 1):  # the caller cancels it when the load ends
                self.points.append(await self._one(self._clock.now() - start))
                await self._clock.sleep(start + len(self.points) * self._every_s - self._clock.now())
        finally:
            await self._client.close()

    async def _one(self, t_s: float) -> Point:
        figures: dict[str, float] = {}
        try:
            reply = await self._client.send(_METRICS, max(2.0, self._every_s))
            if reply.status == 200:
                figures = parse_process_metrics(reply.body.decode("utf-8", "replace"))
        except (OSError, TimeoutError, ValueError, PeakgateError, asyncio.IncompleteReadError):
            pass  # a missed scrape is a gap in the series, not the end of the soak
        engine = tree_fds = None
        if self._pid is not None:
            try:
                tree = read_tree(self._pid)
            except OSError:
                pass  # the gateway is gone: its figures stop here
            else:
                engine, tree_fds = float(tree.engine_rss_bytes), float(tree.open_fds)
                figures.setdefault("rss_bytes", float(tree.rss_bytes))
        return Point(t_s, figures.get("rss_bytes"), figures.get("open_fds"), figures.get("cpu_s"), engine, tree_fds)


def run(args: argparse.Namespace) -> int:
    session.check(args)
    profile = soak_profile(args.rps, args.duration)
    print(f"soak: {args.rps:g} req/s for {args.duration:.0f} s, a sample every {args.sample_s:g} s",
          file=sys.stderr)
    load_at_start = session.load_averages()
    result, points = asyncio.run(_soak(args, profile, MonotonicClock()))
    thresholds = SoakThresholds(horizon_h=args.horizon_h, min_span_s=args.min_span_s)
    data = {
        "started_at": result.started_at, "target": result.target, "rps": args.rps, "duration_s": args.duration,
        "sample_s": args.sample_s, "min_span_s": args.min_span_s, "note": args.note,
        "machine": session.machine(load_at_start),
        "load": summarize(result, profile)["total"],
        "gateway": analyse([Sample(p.t_s, p.rss_bytes, p.open_fds) for p in points
                            if p.rss_bytes is not None and p.open_fds is not None], thresholds),
        "engines": analyse([Sample(p.t_s, p.engine_rss_bytes, p.tree_fds) for p in points
                            if p.engine_rss_bytes is not None and p.tree_fds is not None], thresholds),
        "points": [asdict(p) for p in points],
    }
    data["verdict"] = worst(data)
    written = soak_report.write(data, args.out)
    print(f"soak {data['verdict']}: {soak_report.headline(data)}")
    print(f"report: {' '.join(map(str, written))}")
    return 1 if data["verdict"] == "FAIL" else 0


def worst(data: dict[str, object]) -> str:
    verdicts = {block["verdict"] for key in ("gateway", "engines")
                if isinstance(block := data[key], dict) and block.get("samples")}
    return "FAIL" if "FAIL" in verdicts else "PASS" if verdicts == {"PASS"} else "INCONCLUSIVE"


async def _soak(args: argparse.Namespace, profile: SurgeProfile, clock: Clock) -> tuple[RunResult, list[Point]]:
    async with session.gateway(args, clock, given=None if args.pid is None else Targets(args.pid)) as gw:
        sampler = Sampler(gw.url, None if gw.targets is None else gw.targets.gateway, clock, args.sample_s)
        task = asyncio.create_task(sampler.run(clock.now(), profile.phases.total_s + args.drain_s))
        try:
            result = await session.surge(gw.url, profile, clock, args)
        finally:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    return result, sampler.points
