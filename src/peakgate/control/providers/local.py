"""The local provider: real `peakgate worker` processes on this machine, serving ones and warm (`--standby`) ones.

Every call reconciles: it reaps exited processes, reads the heartbeats (a process is ready once the heartbeat
carrying its pid says so: the provider assumes no other machine's workers share its Redis), then starts or
stops processes towards the target. Scale-in sends SIGTERM, which
drains a worker (it finishes and answers what it holds, see `scaleout.worker`); one still running
`stop_timeout_s` later is killed, and what it held stays pending in Redis for another worker to reclaim, so
accepted work is never dropped. Processes not yet ready are stopped first (they hold nothing), then the newest.

A start that fails (the executable cannot run, the process exits or reports an error before it is ready, or is
not ready within `start_timeout_s`) is reported as a `failed` event and logged, and starting pauses with
exponential backoff; the next reconcile after it tries again. Nothing here raises into the control loop.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from peakgate.cache.redis_l2 import Backoff
from peakgate.clock import Clock
from peakgate.control.contract import ProviderState, ReplicaEvent
from peakgate.control.loop_settings import LocalProviderConfig
from peakgate.control.providers.base import BeatSource
from peakgate.scaleout.cluster import Heartbeat
from peakgate.scaleout.transport import QueueUnreachable

_log = logging.getLogger(__name__)
_CLOSE_POLL_S = 0.1


class Process(Protocol):
    @property
    def pid(self) -> int: ...

    def poll(self) -> int | None: ...

    def terminate(self) -> None: ...

    def kill(self) -> None: ...


class Spawn(Protocol):
    def __call__(self, name: str, standby: bool) -> Process:
        """Start worker `name` (warm when `standby`); raises `OSError` when it cannot be started."""
        ...


class WorkerSpawner:
    """`python -m peakgate.cli worker [--config FILE] [worker_args] [--standby]`, its output in `log_dir/<name>.log`,
    in a session of its own (a Ctrl-C meant for the autoscaler does not reach it: the autoscaler drains it)."""

    def __init__(self, config_path: Path | None, config: LocalProviderConfig) -> None:
        self._argv = [sys.executable, "-m", "peakgate.cli", "worker",
                      *(["--config", str(config_path)] if config_path is not None else []), *config.worker_args]
        self._log_dir = config.log_dir

    def __call__(self, name: str, standby: bool) -> subprocess.Popen[bytes]:
        self._log_dir.mkdir(parents=True, exist_ok=True)
        with (self._log_dir / f"{name}.log").open("ab") as log:
            return subprocess.Popen([*self._argv, *(["--standby"] if standby else [])], stdin=subprocess.DEVNULL,
                                    stdout=log, stderr=subprocess.STDOUT, start_new_session=True)


@dataclass(eq=False, slots=True)
class _Replica:
    name: str
    proc: Process
    warm: bool
    started_at: float
    ready: bool = False
    standby: bool = False
    stopping_at: float | None = None
    killed: bool = False

    @property
    def active(self) -> bool:
        return self.stopping_at is None


class LocalProvider:
    def __init__(self, spawn: Spawn, beats: BeatSource, config: LocalProviderConfig, clock: Clock) -> None:
        self._spawn = spawn
        self._beats = beats
        self._config = config
        self._clock = clock
        self._backoff = Backoff(clock, config.backoff_initial_s, config.backoff_max_s)
        self._replicas: list[_Replica] = []
        self._events: list[ReplicaEvent] = []
        self._numbers = itertools.count(1)
        self._blind = False  # heartbeats out of reach (logged once)

    async def current(self) -> ProviderState:
        await self._refresh()
        return self._state()

    async def scale_to(self, replicas: int) -> ProviderState:
        await self._refresh()
        self._converge(False, replicas)
        return self._state()

    async def keep_warm(self, replicas: int) -> None:
        await self._refresh()
        self._converge(True, replicas)

    async def close(self) -> None:
        """Drain every worker; kill what is still running `stop_timeout_s` later."""
        for replica in self._replicas:
            if replica.active:
                self._stop(replica, "autoscaler stopping")
        deadline = self._clock.now() + self._config.stop_timeout_s
        while self._replicas and self._clock.now() < deadline:
            await self._clock.sleep(_CLOSE_POLL_S)
            self._reap()
        for replica in self._replicas:
            with contextlib.suppress(ProcessLookupError):
                replica.proc.kill()
        self._replicas.clear()

    async def _refresh(self) -> None:
        self._reap()
        try:
            beats = await self._beats.heartbeats()
        except QueueUnreachable as exc:
            if not self._blind:
                _log.warning("local provider: no heartbeats, readiness unknown until Redis answers: %s", exc.message)
            self._blind = True
            return
        self._blind = False
        by_pid = {beat.pid: beat for beat in beats}
        now = self._clock.now()
        for replica in self._replicas:
            beat = by_pid.get(replica.proc.pid)
            if replica.active:
                self._follow(replica, beat, now)
            elif not replica.killed and now - (replica.stopping_at or 0.0) > self._config.stop_timeout_s:
                _log.warning("worker %s still draining after %.0fs: killed; what it holds stays pending for "
                             "another worker", replica.name, self._config.stop_timeout_s)
                replica.killed = True
                with contextlib.suppress(ProcessLookupError):
                    replica.proc.kill()

    def _follow(self, replica: _Replica, beat: Heartbeat | None, now: float) -> None:
        """Readiness from its heartbeat; a start that reports an error or takes too long has failed."""
        if beat is not None and beat.error is not None:
            self._failed(replica, f"cannot serve: {beat.error}")
            self._stop(replica, "failed start")
        elif beat is not None and beat.ready and not beat.draining:
            replica.standby = beat.standby
            if not replica.ready:
                replica.ready = True
                self._backoff.succeeded()
                self._event(replica.name, "serving", "standing by (warm)" if replica.warm else "taking work")
        elif not replica.ready and now - replica.started_at > self._config.start_timeout_s:
            self._failed(replica, f"not ready after {self._config.start_timeout_s:.0f}s")
            self._stop(replica, "failed start")

    def _reap(self) -> None:
        for replica in [r for r in self._replicas if r.proc.poll() is not None]:
            self._replicas.remove(replica)
            code = replica.proc.poll()
            if replica.active:
                when = "while serving" if replica.ready else "before it was ready"
                self._failed(replica, f"exited with code {code} {when}")
            else:
                self._event(replica.name, "gone", f"exit code {code}")

    def _converge(self, warm: bool, target: int) -> None:
        active = [r for r in self._replicas if r.warm == warm and r.active]
        # Not ready first (they hold nothing), then standing by (serving nothing), then the newest.
        victims = sorted(reversed(active), key=lambda r: (r.ready, not r.standby))  # stable: newest first
        for replica in victims[: max(0, len(active) - target)]:
            self._stop(replica, "scale-in: draining")
        for _ in range(target - len(active)):
            if not self._backoff.ready() or not self._start(warm):
                return

    def _start(self, warm: bool) -> bool:
        name = f"{'warm' if warm else 'worker'}-{next(self._numbers)}"
        try:
            proc = self._spawn(name, warm)
        except OSError as exc:
            self._event(name, "failed", f"cannot start: {exc}")
            self._back_off(name)
            return False
        self._replicas.append(_Replica(name, proc, warm, self._clock.now()))
        self._event(name, "requested", f"pid {proc.pid}{' (warm)' if warm else ''}")
        return True

    def _stop(self, replica: _Replica, why: str) -> None:
        replica.stopping_at = self._clock.now()
        with contextlib.suppress(ProcessLookupError):
            replica.proc.terminate()
        self._event(replica.name, "draining", why)

    def _failed(self, replica: _Replica, why: str) -> None:
        self._event(replica.name, "failed", why)
        self._back_off(replica.name)

    def _back_off(self, name: str) -> None:
        delay = self._backoff.failed()
        _log.warning("worker %s failed to start or stopped unexpectedly (%d in a row): next start in %.1fs "
                     "(its log: %s)", name, self._backoff.failures, delay, self._config.log_dir / f"{name}.log")

    def _event(self, replica: str, kind: str, detail: str) -> None:
        self._events.append(ReplicaEvent(replica, kind, self._clock.now(), detail))

    def _state(self) -> ProviderState:
        active = [r for r in self._replicas if r.active]
        events, self._events = tuple(self._events), []
        return ProviderState(
            serving=sum(1 for r in active if not r.warm and r.ready),
            starting=sum(1 for r in active if not r.warm and not r.ready),
            draining=sum(1 for r in self._replicas if not r.active),
            warm=sum(1 for r in active if r.warm and r.ready and r.standby),
            events=events,
        )
