"""Faults a drill injects into a served gateway: the plan (what, when, for how long) and the executor.

Given on the command line as `KIND@AT[:FOR]`, times like `--duration`'s (`20`, `20s`, `1.5m`):

- `kill-pipeline@20s`: SIGKILL one engine pipeline (an Apertium child process group of the gateway); the
  gateway must notice and start a new one.
- `stall-pipeline@40s:5s`: SIGSTOP one pipeline for 5 s, then SIGCONT: an engine that goes slow.
- `kill-worker@30s` (scale-out): SIGKILL one `peakgate worker`; the others must take over its work.
- `stop-redis@60s:5s` (scale-out): SIGSTOP the queue's Redis for 5 s, then SIGCONT: Redis unreachable.
- `fail-upstream@15s:15s`: the drill's own remote-LLM upstream (`drills.upstream`, SIGUSR1) answers HTTP 500 for
  15 s, then serves again (SIGUSR2): a remote model going down and coming back.

Only processes the drill was given are ever signalled: the workers, Redis and its own upstream by pid, and
pipelines, which are direct children of the gateway or a worker that lead their own session (the engine starts
each one so) and whose command line names the engine (`match`, e.g. the mode `eng-spa`); a pipeline is signalled
as its process group.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import signal
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from peakgate.clock import Clock
from peakgate.drills.args import seconds_arg
from peakgate.drills.soak_probe import children
from peakgate.errors import ConfigError

FaultKind = Literal["kill-pipeline", "stall-pipeline", "kill-worker", "stop-redis", "fail-upstream"]
FAULT_KINDS: tuple[FaultKind, ...] = ("kill-pipeline", "stall-pipeline", "kill-worker", "stop-redis", "fail-upstream")
# A lasting fault's signals at its start and its end; the rest are instant (SIGKILL).
_LASTING: dict[str, tuple[int, int]] = {"stall-pipeline": (signal.SIGSTOP, signal.SIGCONT),
                                        "stop-redis": (signal.SIGSTOP, signal.SIGCONT),
                                        "fail-upstream": (signal.SIGUSR1, signal.SIGUSR2)}
_WATCH_STEP_S = 0.2

Send = Callable[[int, int, bool], None]  # (pid, signal, whole process group)


def send_signal(pid: int, sig: int, group: bool) -> None:
    (os.killpg if group else os.kill)(pid, sig)


@dataclass(frozen=True, slots=True)
class Fault:
    kind: FaultKind
    at_s: float  # from the surge's start
    for_s: float = 0.0  # how long a stall lasts (0 for a kill)

    @property
    def ends_s(self) -> float:
        return self.at_s + self.for_s

    def __str__(self) -> str:
        return f"{self.kind}@{self.at_s:g}s" + (f":{self.for_s:g}s" if self.for_s else "")


def parse_fault(text: str) -> Fault:
    """`KIND@AT[:FOR]`; an argparse type, so a bad spec is a usage error naming it."""
    name, at_sign, when = text.partition("@")
    kind = next((k for k in FAULT_KINDS if k == name), None)
    if kind is None or not at_sign:
        raise argparse.ArgumentTypeError(
            f"fault {text!r}: expected KIND@AT[:FOR] with KIND one of {', '.join(FAULT_KINDS)}")
    at, colon, length = when.partition(":")
    try:
        at_s = seconds_arg(at)
        for_s = seconds_arg(length) if colon else 0.0
    except argparse.ArgumentTypeError as exc:
        raise argparse.ArgumentTypeError(f"fault {text!r}: {exc}") from exc
    if kind in _LASTING and not colon:
        raise argparse.ArgumentTypeError(f"fault {text!r}: {kind} needs its length, e.g. {text}:5s")
    if kind not in _LASTING and colon:
        raise argparse.ArgumentTypeError(f"fault {text!r}: {kind} is instant, drop ':{length}'")
    return Fault(kind, at_s, for_s)


def plan(faults: Sequence[Fault], duration_s: float) -> list[Fault]:
    """The faults in time order; each must start within the arrival window, or it would hit no load."""
    for fault in faults:
        if fault.at_s >= duration_s:
            raise ConfigError(f"fault {fault}: starts at or after the surge's end ({duration_s:g} s)")
    return sorted(faults, key=lambda f: f.at_s)


@dataclass(frozen=True, slots=True)
class FaultEvent:
    """What an injection did; times are seconds from the surge's start."""

    fault: str
    kind: FaultKind
    at_s: float  # when it was injected
    ended_s: float  # when the fault was over (the kill itself, or SIGCONT)
    target_pid: int | None  # None: nothing to hit (no pipeline matched, no worker or Redis given)
    replaced_by: int | None = None  # kill: the new pipeline's pid
    replaced_after_s: float | None = None
    outcome: str = ""


def pipelines(pid: int, match: str, proc: Path = Path("/proc")) -> list[int]:
    """Engine pipelines under `pid`: direct children leading their own session, command line naming `match`."""
    found = []
    for child in children(pid, proc):
        try:
            stat = (proc / str(child) / "stat").read_text()
            cmdline = (proc / str(child) / "cmdline").read_bytes()
        except OSError:
            continue  # exited mid-walk
        session = int(stat.rsplit(")", 1)[1].split()[3])
        if session == child and match.encode() in cmdline:
            found.append(child)
    return sorted(found)


@dataclass(frozen=True, slots=True)
class Targets:
    """What a drill may signal: the gateway (never itself, only its pipelines), the workers, Redis, and the
    upstream the drill started itself."""

    gateway: int
    workers: tuple[int, ...] = ()
    redis: int | None = None
    upstream: int | None = None


class Injector:
    """Runs a plan against `targets`, each fault at its time from `start` (a clock reading)."""

    def __init__(self, targets: Targets, clock: Clock, *, match: str = "eng-spa", watch_s: float = 30.0,
                 proc: Path = Path("/proc"), send: Send = send_signal) -> None:
        self._targets, self._clock, self._match = targets, clock, match
        self._watch_s = watch_s
        self._proc = proc
        self._send = send

    async def run(self, faults: Sequence[Fault], start: float) -> list[FaultEvent]:
        return list(await asyncio.gather(*(self._one(f, start) for f in faults)))

    def _pipelines(self) -> list[int]:
        hosts = (self._targets.gateway, *self._targets.workers)
        return sorted(p for host in hosts for p in pipelines(host, self._match, self._proc))

    def _victim(self, kind: FaultKind) -> tuple[int | None, str]:
        """The process a fault hits first (the oldest: the one picked first, so its loss is felt soonest)."""
        if kind in ("kill-pipeline", "stall-pipeline"):
            found = self._pipelines()
            return (found[0] if found else None), f"no pipeline matching {self._match!r}"
        if kind == "kill-worker":
            alive = [w for w in self._targets.workers if (self._proc / str(w)).is_dir()]
            return (alive[0] if alive else None), "no live worker given"
        if kind == "fail-upstream":
            return self._targets.upstream, "no drill upstream (the drill starts one only with its own gateway)"
        return self._targets.redis, "no Redis given"

    async def _one(self, fault: Fault, start: float) -> FaultEvent:
        await self._clock.sleep(start + fault.at_s - self._clock.now())
        at = self._clock.now() - start
        victim, missing = self._victim(fault.kind)
        if victim is None:
            return FaultEvent(str(fault), fault.kind, at, at, None, outcome=missing)
        group = fault.kind in ("kill-pipeline", "stall-pipeline")
        before = self._pipelines()
        try:
            self._send(victim, _LASTING[fault.kind][0] if fault.kind in _LASTING else signal.SIGKILL, group)
        except ProcessLookupError:
            return FaultEvent(str(fault), fault.kind, at, at, victim, outcome=f"{victim} was already gone")
        if fault.kind in _LASTING:
            return await self._hold(fault, start, at, victim, group)
        if fault.kind == "kill-pipeline":
            return await self._watch(fault, start, at, victim, before)
        return FaultEvent(str(fault), fault.kind, at, at, victim, outcome=f"killed worker {victim}")

    async def _watch(self, fault: Fault, start: float, at: float, victim: int, before: list[int]) -> FaultEvent:
        """Until the gateway (or worker) has started a pipeline in place of the killed one, or `watch_s`."""
        for _ in range(int(self._watch_s / _WATCH_STEP_S) + 1):
            await self._clock.sleep(_WATCH_STEP_S)
            fresh = [p for p in self._pipelines() if p not in before]
            if fresh:
                took = self._clock.now() - start - at
                return FaultEvent(str(fault), fault.kind, at, at, victim, fresh[0], took,
                                  f"killed {victim}; a new pipeline {fresh[0]} started {took:.1f} s later")
        return FaultEvent(str(fault), fault.kind, at, at, victim,
                          outcome=f"killed {victim}; no new pipeline within {self._watch_s:g} s")

    async def _hold(self, fault: Fault, start: float, at: float, victim: int, group: bool) -> FaultEvent:
        try:
            await self._clock.sleep(fault.for_s)
        finally:
            with contextlib.suppress(ProcessLookupError):  # however the drill ends, never leave it stopped
                self._send(victim, _LASTING[fault.kind][1], group)
        ended = self._clock.now() - start
        outcome = (f"upstream {victim} answered HTTP 500 for {ended - at:.1f} s, then served again"
                   if fault.kind == "fail-upstream" else f"stopped {victim} for {ended - at:.1f} s, then continued it")
        return FaultEvent(str(fault), fault.kind, at, ended, victim, outcome=outcome)
