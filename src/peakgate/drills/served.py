"""A `peakgate serve` the drill or soak starts itself: on 127.0.0.1, a free port, ready before the load, stopped
after it (SIGTERM, then SIGKILL past a bound).

Without a config the gateway serves English->Spanish on two Apertium pipelines with the int8 student behind them:
the pipelines are child processes, so a drill can kill or stall one and a soak can see their memory, and Apertium
is cheap enough that a modest load measures the gateway rather than CPU contention on a shared machine.

A drill with a `fail-upstream` fault also starts its own OpenAI-compatible upstream (`drills.upstream`) on
127.0.0.1 and puts a model using it first in the default tier, the Apertium pipelines and the student behind it.
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
from peakgate.drills import upstream
from peakgate.drills.http import Origin, OriginClient
from peakgate.drills.wire import Call
from peakgate.errors import PeakgateError

DRILL_MODELS = ("apertium-en-es", "student-en-es-int8")
UPSTREAM_MODEL = "upstream-en-es"
_READY = Call("GET", "/readyz", ())
_POLL_S = 0.25


class ServeFailed(PeakgateError):
    """The gateway this tool started exited or never became ready."""

    code = "serve_failed"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def drill_config(data_dir: Path, upstream_url: str | None = None) -> dict[str, Any]:
    """The default served config: Apertium en->es (2 pipelines) first, the int8 student as its fallback.

    With `upstream_url` (the drill's own upstream), the default tier "large" tries the upstream first and falls
    back to those two; "tiny" keeps them alone, so long batch jobs and ladder level 3 (which route to "tiny")
    never reach the upstream, as with a real remote large model.
    """
    models = []
    for model in default_models():
        if model.name in DRILL_MODELS:
            update = {"pipelines": 2} if model.engine == "apertium" else {}
            models.append(model.model_copy(update=update).model_dump(mode="json"))
    config: dict[str, Any] = {"models": models, "tiers": {"tiny": list(DRILL_MODELS)}, "default_tier": "tiny",
                              "log_level": "warning", "data_dir": str(data_dir)}
    if upstream_url is not None:
        config["models"].append({"name": UPSTREAM_MODEL, "engine": "openai", "source": "en", "target": "es",
                                 "base_url": f"{upstream_url}/v1", "upstream_model": "drill-apertium-eng-spa",
                                 "max_batch_size": 16, "timeout_s": 5.0})
        config["tiers"]["large"] = [UPSTREAM_MODEL, *DRILL_MODELS]
        config["default_tier"] = "large"
    return config


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
    argv = peakgate_argv("serve", "--host", "127.0.0.1", "--port", str(port), "--config", str(config))
    return await launch(argv, f"http://127.0.0.1:{port}", clock, ready_s=ready_s, log=log)


async def start_upstream(clock: Clock, *, ready_s: float = 60.0, log: Path | None = None) -> Served:
    """Start the drill's own upstream (`drills.upstream`) on 127.0.0.1; returns once its /readyz answers."""
    port = free_port()
    argv = [sys.executable, "-m", "peakgate.drills.upstream", "--port", str(port)]
    return await launch(argv, f"http://{upstream.HOST}:{port}", clock, ready_s=ready_s, log=log)


async def launch(argv: list[str], url: str, clock: Clock, *, ready_s: float, log: Path | None) -> Served:
    """Run `argv`, a server listening at `url`, and return once its /readyz answers 200; stopped on failure."""
    served = Served(url, await spawn(argv, log))
    try:
        await _wait_ready(served, clock, ready_s)
    except BaseException:
        await stop_process(served.proc)
        raise
    return served


async def _wait_ready(served: Served, clock: Clock, ready_s: float) -> None:
    client = OriginClient(Origin.parse(served.url))
    deadline = clock.now() + ready_s
    try:
        while clock.now() < deadline:
            if served.proc.returncode is not None:
                raise ServeFailed(f"{served.url}: the process exited with {served.proc.returncode} before it was ready")
            try:
                if (await client.send(_READY, 2.0)).status == 200:
                    return
            except (OSError, TimeoutError, PeakgateError, asyncio.IncompleteReadError):
                pass  # not listening yet
            await clock.sleep(_POLL_S)
    finally:
        await client.close()
    raise ServeFailed(f"{served.url} not ready after {ready_s:g} s")


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
