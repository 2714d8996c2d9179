"""What `peakgate drill` and `peakgate soak` share: which gateway (one started here, or one given), the open-loop
load on it, and the machine's state for the record.

With `--target` the tool contacts only that origin and signals or reads only `--pid` (the gateway's process, for
faults and process figures); without it, it starts its own gateway on 127.0.0.1 and stops it afterwards.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

from peakgate.clock import Clock
from peakgate.drills import served, served_cluster
from peakgate.drills.args import positive_arg
from peakgate.drills.arrivals import schedule
from peakgate.drills.faults import Targets
from peakgate.drills.http import Origin, OriginClient
from peakgate.drills.mix import Planner
from peakgate.drills.profile import SurgeProfile
from peakgate.drills.records import RunResult
from peakgate.drills.runner import Runner
from peakgate.errors import ConfigError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The gateway and load options both commands take."""
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--target", help="a running gateway's base URL (nothing else is contacted); default: start "
                       "`peakgate serve` on 127.0.0.1 for the run")
    where.add_argument("--config", type=Path, help="config for the gateway started here (default: Apertium en-es "
                       "on 2 pipelines, then the int8 student)")
    parser.add_argument("--pid", type=int, help="with --target: the gateway's process id (faults and process "
                        "figures need it; only it and its children are touched)")
    parser.add_argument("--seed", type=int, default=0, help="fixes arrivals, mix and texts (default 0)")
    parser.add_argument("--drain-s", type=positive_arg, default=30.0,
                        help="after the arrivals, at most this long for answers and job polls (default 30)")
    parser.add_argument("--max-outstanding", type=int, default=4000,
                        help="the generator's cap on unanswered requests (default 4000)")
    parser.add_argument("--note", help="a line for the record (the machine, what else ran)")


def check(args: argparse.Namespace) -> None:
    if args.pid is not None and args.target is None:
        raise ConfigError("--pid goes with --target: a gateway started here is known already")
    if args.pid is not None and not Path(f"/proc/{args.pid}").is_dir():
        raise ConfigError(f"--pid {args.pid}: no such process")
    if args.target is not None:
        Origin.parse(args.target)  # a bad URL fails before anything starts


@dataclass(frozen=True, slots=True)
class Gateway:
    url: str
    targets: Targets | None  # None: a remote gateway given without --pid


@contextlib.asynccontextmanager
async def gateway(args: argparse.Namespace, clock: Clock, *, workers: int = 0, given: Targets | None = None,
                  upstream: bool = False) -> AsyncIterator[Gateway]:
    """The gateway at --target (its processes `given`, if known), or one started here (behind Redis and
    `workers` workers when > 0; with `upstream`, in front of the drill's own upstream)."""
    if args.target is not None:
        yield Gateway(Origin.parse(args.target).url, given)
        return
    with tempfile.TemporaryDirectory(prefix="peakgate-drill-") as tmp:
        if workers > 0:
            async with served_cluster.cluster(workers, Path(tmp), clock) as up:
                yield Gateway(up.url, Targets(up.gateway_pid, up.worker_pids, up.redis_pid))
            return
        async with _own_gateway(args.config, Path(tmp), clock, upstream) as own:
            yield own


@contextlib.asynccontextmanager
async def _own_gateway(config: Path | None, tmp: Path, clock: Clock, upstream: bool) -> AsyncIterator[Gateway]:
    """`peakgate serve` on `config`, or on the drill's default (with the drill's upstream first when asked)."""
    remote = await served.start_upstream(clock, log=tmp / "upstream.log") if upstream else None
    try:
        if config is None:
            data = served.drill_config(tmp / "data", remote.url if remote else None)
            config = served.write_config(data, tmp / "c.json")
        proc = await served.start(config, clock, log=tmp / "serve.log")
        try:
            yield Gateway(proc.url, Targets(proc.pid, upstream=remote.pid if remote else None))
        finally:
            await served.stop_process(proc.proc)
    finally:
        if remote is not None:
            await served.stop_process(remote.proc)


async def surge(url: str, profile: SurgeProfile, clock: Clock, args: argparse.Namespace) -> RunResult:
    """The open-loop load of `profile` against `url`, as `peakgate surge` sends it."""
    planner = Planner(profile, args.seed)
    plans = [planner.plan(a) for a in schedule(profile, args.seed)]
    # As in `peakgate surge`: the plans live for the whole run, so out of the collector's sight (a long pause in
    # the generator would read as gateway latency).
    gc.collect()
    gc.freeze()
    client = OriginClient(Origin.parse(url))
    runner = Runner(client, plans, profile, clock, target=url, seed=args.seed,
                    max_outstanding=args.max_outstanding, drain_s=args.drain_s)
    try:
        return await runner.run()
    finally:
        await client.close()


def load_averages() -> str:
    """The 1/5/15-minute load averages: a drill on a busy machine measures the machine as much as the gateway."""
    return "/".join(f"{v:.2f}" for v in os.getloadavg())


def machine(load_at_start: str) -> dict[str, object]:
    """For the record: cores, and the load averages at the start (given) and now, at the end."""
    return {"cores": os.cpu_count(), "load 1/5/15 min at start": load_at_start, "at end": load_averages()}
