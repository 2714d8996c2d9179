"""A `peakgate serve` the drill or soak starts itself: on 127.0.0.1, a free port, ready before the load, stopped
after it (SIGTERM, then SIGKILL past a bound).

Without a config the gateway serves English->Spanish on two Apertium pipelines with the int8 student behind them:
the pipelines are child processes, so a drill can kill or stall one and a soak can see their memory, and Apertium
is cheap enough that a modest load measures the gateway rather than CPU contention on a shared machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peakgate.clock import Clock
from peakgate.config import default_models
from peakgate.drills.http import Origin, OriginClient
from peakgate.drills.wire import Call
from peakgate.errors import PeakgateError

DRILL_MODELS = ("apertium-en-es", "student-en-es-int8")
_READY = Call("GET", "/readyz", ())
_POLL_S = 0.25


class ServeFailed(PeakgateError):
    """The gateway this tool started exited or never became ready."""

    code = "serve_failed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def drill_config(data_dir: Path) -> dict[str, Any]:
    """The default served config: Apertium en->es (2 pipelines) first, the int8 student as its fallback."""
    models = []
    for model in default_models():
        if model.name in DRILL_MODELS:
            update = {"pipelines": 2} if model.engine == "apertium" else {}
            models.append(model.model_copy(update=update).model_dump(mode="json"))
    return {"models": models, "tiers": {"tiny": list(DRILL_MODELS)}, "default_tier": "tiny",
            "log_level": "warning", "data_dir": str(data_dir)}


@dataclass
class Served:
    url: str
    proc: asyncio.subprocess.Process

    @property
    def pid(self) -> int:
        return self.proc.pid


def peakgate_argv(*args: str) -> list[str]:
    return [sys.executable, "-m", "peakgate.cli", *args]


async def spawn(argv: list[str], log: Path | None) -> asyncio.subprocess.Process:
    """A child process whose stdout and stderr go to `log` (or nowhere)."""
    if log is None:
        return await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.DEVNULL)
    with log.open("ab") as sink:  # the child keeps its own copy of the descriptor
        return await asyncio.create_subprocess_exec(*argv, stdout=sink, stderr=asyncio.subprocess.STDOUT)


async def start(config: Path, clock: Clock, *, ready_s: float = 120.0, log: Path | None = None) -> Served:
    """Start `peakgate serve --config config` and return once /readyz answers 200 (at most `ready_s`)."""
    port = free_port()
    proc = await spawn(peakgate_argv("serve", "--host", "127.0.0.1", "--port", str(port), "--config", str(config)),
                       log)
    served = Served(f"http://127.0.0.1:{port}", proc)
    try:
        await _wait_ready(served, clock, ready_s)
    except BaseException:
        await stop_process(proc)
        raise
    return served


async def _wait_ready(served: Served, clock: Clock, ready_s: float) -> None:
    client = OriginClient(Origin.parse(served.url))
    deadline = clock.now() + ready_s
    try:
        while clock.now() < deadline:
            if served.proc.returncode is not None:
                raise ServeFailed(f"peakgate serve exited with {served.proc.returncode} before it was ready")
            try:
                if (await client.send(_READY, 2.0)).status == 200:
                    return
            except (OSError, TimeoutError, PeakgateError, asyncio.IncompleteReadError):
                pass  # not listening yet
            await clock.sleep(_POLL_S)
    finally:
        await client.close()
    raise ServeFailed(f"peakgate serve at {served.url} not ready after {ready_s:g} s")


async def stop_process(proc: asyncio.subprocess.Process, *, grace_s: float = 30.0) -> int:
    """SIGTERM, up to `grace_s` for its own shutdown (a gateway drains and closes its engines), then SIGKILL;
    returns the exit code."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):  # a drill may have killed it already
            proc.terminate()
    try:
        async with asyncio.timeout(grace_s):
            return await proc.wait()
    except TimeoutError:
        proc.kill()
        return await proc.wait()


def write_config(data: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps(data), encoding="utf-8")
    return path
