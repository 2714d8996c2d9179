"""Drill faults: specs parsed and planned, pipelines found in a fake /proc, and the injector on a FakeClock
(signals recorded, not sent)."""

from __future__ import annotations

import argparse
import asyncio
import re
import signal
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

import pytest

from peakgate.clock import FakeClock
from peakgate.drills.faults import Fault, FaultEvent, Injector, Targets, parse_fault, pipelines, plan
from peakgate.errors import ConfigError

GATEWAY = 10
MODE = b"bash\0-c\0lt-proc -z '/usr/share/apertium/apertium-eng-spa/eng-spa.automorf.bin' | apertium-tagger\0"


@pytest.mark.parametrize(("text", "fault"), [
    ("kill-pipeline@20s", Fault("kill-pipeline", 20.0)),
    ("kill-pipeline@1.5m", Fault("kill-pipeline", 90.0)),
    ("stall-pipeline@40:5s", Fault("stall-pipeline", 40.0, 5.0)),
    ("kill-worker@30s", Fault("kill-worker", 30.0)),
    ("stop-redis@1m:5s", Fault("stop-redis", 60.0, 5.0)),
    ("fail-upstream@10s:5s", Fault("fail-upstream", 10.0, 5.0)),
])
def test_specs(text: str, fault: Fault) -> None:
    assert parse_fault(text) == fault
    assert parse_fault(str(fault)) == fault  # the record's spelling reads back


@pytest.mark.parametrize(("text", "says"), [
    ("explode@1s", "KIND@AT[:FOR]"),
    ("kill-pipeline", "KIND@AT[:FOR]"),
    ("kill-pipeline@soon", "not a duration"),
    ("kill-pipeline@5s:2s", "kill-pipeline is instant"),
    ("stall-pipeline@5s", "stall-pipeline needs its length"),
    ("stop-redis@5s", "stop-redis needs its length"),
    ("kill-worker@5s:1s", "kill-worker is instant"),
    ("stall-pipeline@5s:0", "more than 0"),
    ("fail-upstream@10s", "fail-upstream needs its length"),
    ("fail-upstream@10s:never", "not a duration"),
    ("fail-upstream:5s@10s", "KIND@AT[:FOR]"),
])
def test_bad_specs_are_named(text: str, says: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(says)) as caught:
        parse_fault(text)
    assert repr(text) in str(caught.value)


def test_plan_orders_faults_and_refuses_one_after_the_arrivals() -> None:
    late, early = Fault("kill-pipeline", 30.0), Fault("stall-pipeline", 5.0, 2.0)
    assert plan([late, early], 60.0) == [early, late]
    with pytest.raises(ConfigError, match="kill-pipeline@30s"):
        plan([late], 30.0)


class FakeProc:
    """A /proc with the gateway, its pipelines (session leaders) and one child that is not a pipeline."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.sent: list[tuple[int, int, float]] = []
        self._kids: list[int] = []
        self.add(GATEWAY, GATEWAY, b"python\0-m\0peakgate.cli\0serve\0")
        for pid in (11, 12):
            self.spawn(pid)
        self.add(13, GATEWAY, MODE)  # in the gateway's session: not a pipeline of its own
        self.add(14, 14, b"bash\0-c\0some-other-engine\0")
        self._write_children()

    def add(self, pid: int, session: int, cmdline: bytes) -> None:
        d = self.root / str(pid)
        (d / "task" / str(pid)).mkdir(parents=True)
        (d / "stat").write_text(f"{pid} (x) S {GATEWAY} {session} {session} 0 -1")
        (d / "cmdline").write_bytes(cmdline)
        if pid != GATEWAY:
            self._kids.append(pid)

    def spawn(self, pid: int) -> None:
        self.add(pid, pid, MODE)
        self._write_children()

    def _write_children(self) -> None:
        (self.root / str(GATEWAY) / "task" / str(GATEWAY) / "children").write_text(" ".join(map(str, self._kids)))

    def reap(self, pid: int) -> None:
        self._kids.remove(pid)
        self._write_children()


def test_pipelines_are_session_leading_children_naming_the_engine(tmp_path: Path) -> None:
    FakeProc(tmp_path)
    assert pipelines(GATEWAY, "eng-spa", tmp_path) == [11, 12]
    assert pipelines(GATEWAY, "fra-spa", tmp_path) == []
    assert pipelines(99, "eng-spa", tmp_path) == []  # gone: nothing to signal


def _recorder(proc: FakeProc, clock: FakeClock) -> Callable[[int, int, bool], None]:
    return lambda pid, sig, _group: proc.sent.append((pid, sig, clock.now()))


async def _drive(clock: FakeClock, run: Coroutine[Any, Any, list[FaultEvent]], step_s: float = 0.1
                 ) -> list[FaultEvent]:
    task = asyncio.ensure_future(run)
    for _ in range(10_000):
        for _ in range(3):
            await asyncio.sleep(0)
        if task.done():
            return task.result()
        clock.advance(step_s)
    raise AssertionError("the injector did not finish")


async def test_kill_then_the_gateway_replaces_the_pipeline(tmp_path: Path) -> None:
    proc, clock = FakeProc(tmp_path), FakeClock(100.0)

    def signal_group(pid: int, sig: int, group: bool) -> None:
        assert group  # a pipeline is signalled as its whole process group
        proc.sent.append((pid, sig, clock.now()))
        proc.reap(pid)
        clock.call_at(clock.now() + 1.0, lambda: proc.spawn(21))  # the gateway restarts it a second later

    injector = Injector(Targets(GATEWAY), clock, proc=tmp_path, send=signal_group, watch_s=5.0)
    (event,) = await _drive(clock, injector.run([Fault("kill-pipeline", 3.0)], start=100.0))
    assert proc.sent == [(11, signal.SIGKILL, pytest.approx(103.0, abs=0.15))]  # within a drive step
    assert (event.target_pid, event.replaced_by, event.at_s) == (11, 21, pytest.approx(3.0, abs=0.15))
    assert event.replaced_after_s == pytest.approx(1.0, abs=0.25)


async def test_a_kill_nobody_repairs_is_reported(tmp_path: Path) -> None:
    proc, clock = FakeProc(tmp_path), FakeClock()
    injector = Injector(Targets(GATEWAY), clock, proc=tmp_path, send=lambda pid, _s, _g: proc.reap(pid), watch_s=2.0)
    (event,) = await _drive(clock, injector.run([Fault("kill-pipeline", 1.0)], start=0.0))
    assert event.replaced_by is None and "no new pipeline within 2 s" in event.outcome


async def test_stall_stops_then_continues_the_same_group(tmp_path: Path) -> None:
    proc, clock = FakeProc(tmp_path), FakeClock()
    injector = Injector(Targets(GATEWAY), clock, proc=tmp_path, send=_recorder(proc, clock))
    (event,) = await _drive(clock, injector.run([Fault("stall-pipeline", 2.0, 5.0)], start=0.0))
    stop_at, cont_at = pytest.approx(2.0, abs=0.15), pytest.approx(7.0, abs=0.15)
    assert proc.sent == [(11, signal.SIGSTOP, stop_at), (11, signal.SIGCONT, cont_at)]
    assert (event.at_s, event.ended_s) == (stop_at, cont_at)


async def test_a_cancelled_stall_still_continues_the_pipeline(tmp_path: Path) -> None:
    proc, clock = FakeProc(tmp_path), FakeClock()
    injector = Injector(Targets(GATEWAY), clock, proc=tmp_path, send=_recorder(proc, clock))
    task = asyncio.ensure_future(injector.run([Fault("stall-pipeline", 1.0, 60.0)], start=0.0))
    for _ in range(30):
        await asyncio.sleep(0)
        clock.advance(0.1)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert [s for _, s, _ in proc.sent] == [signal.SIGSTOP, signal.SIGCONT]


async def test_no_matching_pipeline_signals_nothing(tmp_path: Path) -> None:
    proc, clock = FakeProc(tmp_path), FakeClock()
    injector = Injector(Targets(GATEWAY), clock, match="fra-spa", proc=tmp_path,
                        send=lambda p, s, _g: proc.sent.append((p, s, 0.0)))
    (event,) = await _drive(clock, injector.run([Fault("kill-pipeline", 1.0)], start=0.0))
    assert event.target_pid is None and proc.sent == [] and "fra-spa" in event.outcome


async def test_worker_and_redis_faults_signal_only_the_given_pids(tmp_path: Path) -> None:
    proc, clock = FakeProc(tmp_path), FakeClock()
    for pid in (30, 31, 40):  # two workers and Redis, as the drill started them
        (tmp_path / str(pid)).mkdir()
    sent: list[tuple[int, int, bool, float]] = []
    injector = Injector(Targets(GATEWAY, (30, 31), 40), clock, proc=tmp_path,
                        send=lambda p, s, g: sent.append((p, s, g, clock.now())))
    kill, stop = await _drive(clock, injector.run([Fault("kill-worker", 1.0), Fault("stop-redis", 2.0, 3.0)], 0.0))
    assert [(p, s, g) for p, s, g, _ in sent] == [(30, signal.SIGKILL, False), (40, signal.SIGSTOP, False),
                                                  (40, signal.SIGCONT, False)]
    assert sent[2][3] - sent[1][3] == pytest.approx(3.0, abs=0.15)
    assert (kill.target_pid, stop.target_pid) == (30, 40)
    assert proc.sent == []  # no pipeline touched


async def test_worker_and_redis_faults_without_targets_signal_nothing(tmp_path: Path) -> None:
    FakeProc(tmp_path)
    clock, sent = FakeClock(), []
    injector = Injector(Targets(GATEWAY), clock, proc=tmp_path, send=lambda p, s, g: sent.append(p))
    events = await _drive(clock, injector.run([Fault("kill-worker", 1.0), Fault("stop-redis", 1.0, 1.0)], 0.0))
    assert sent == [] and [e.target_pid for e in events] == [None, None]
    assert [e.outcome for e in events] == ["no live worker given", "no Redis given"]


async def test_fail_upstream_switches_only_the_drills_upstream_off_then_on(tmp_path: Path) -> None:
    proc, clock = FakeProc(tmp_path), FakeClock()
    sent: list[tuple[int, int, bool, float]] = []
    injector = Injector(Targets(GATEWAY, upstream=50), clock, proc=tmp_path,
                        send=lambda p, s, g: sent.append((p, s, g, clock.now())))
    (event,) = await _drive(clock, injector.run([Fault("fail-upstream", 10.0, 5.0)], 0.0))
    assert [(p, s, g) for p, s, g, _ in sent] == [(50, signal.SIGUSR1, False), (50, signal.SIGUSR2, False)]
    assert (event.at_s, event.ended_s) == (pytest.approx(10.0, abs=0.25), pytest.approx(15.0, abs=0.25))
    assert event.target_pid == 50 and "answered HTTP 500 for 5." in event.outcome
    assert proc.sent == []  # no pipeline touched


async def test_fail_upstream_without_the_drills_upstream_signals_nothing(tmp_path: Path) -> None:
    FakeProc(tmp_path)
    clock, sent = FakeClock(), []
    injector = Injector(Targets(GATEWAY), clock, proc=tmp_path, send=lambda p, s, g: sent.append(p))
    (event,) = await _drive(clock, injector.run([Fault("fail-upstream", 1.0, 1.0)], 0.0))
    assert sent == [] and event.target_pid is None and "no drill upstream" in event.outcome
