"""A scale-out deployment the drill starts itself: a throwaway redis-server, `peakgate worker`s and one gateway
that hands its work to them through Redis, all on 127.0.0.1, all stopped afterwards.

Redis runs without persistence: a drill's queue is as disposable as its data directory.
"""

from __future__ import annotations

import asyncio
import contextlib
import shutil
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peakgate.clock import Clock
from peakgate.drills import served
from peakgate.drills.http import Origin, OriginClient
from peakgate.drills.scrape import parse
from peakgate.drills.served import ServeFailed
from peakgate.drills.wire import Call
from peakgate.errors import ConfigError, PeakgateError

_METRICS = Call("GET", "/metrics", ())
_POLL_S = 0.25


@dataclass(frozen=True, slots=True)
class Cluster:
    url: str
    gateway_pid: int
    worker_pids: tuple[int, ...]
    redis_pid: int


def cluster_config(data_dir: Path, redis_url: str) -> dict[str, Any]:
    """The drill's models (Apertium en->es, then the int8 student), served by workers behind Redis."""
    return served.drill_config(data_dir) | {"queue": {"backend": "redis", "redis_url": redis_url}}


@contextlib.asynccontextmanager
async def cluster(workers: int, tmp: Path, clock: Clock, *, ready_s: float = 120.0) -> AsyncIterator[Cluster]:
    binary = shutil.which("redis-server")
    if binary is None:
        raise ConfigError("--workers needs redis-server on PATH (a throwaway one runs the queue)")
    port = served.free_port()
    redis = await served.spawn([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                                "--appendonly", "no"], tmp / "redis.log")
    procs: list[asyncio.subprocess.Process] = [redis]
    try:
        await _wait_redis(port, redis, clock, ready_s)
        config = served.write_config(cluster_config(tmp / "data", f"redis://127.0.0.1:{port}/0"), tmp / "c.json")
        for n in range(workers):
            procs.append(await served.spawn(served.peakgate_argv("worker", "--config", str(config)),
                                            tmp / f"worker-{n}.log"))
        gateway = await served.start(config, clock, ready_s=ready_s, log=tmp / "serve.log")
        procs.append(gateway.proc)
        await _wait_workers(gateway.url, workers, clock, ready_s)
        yield Cluster(gateway.url, gateway.pid, tuple(p.pid for p in procs[1:-1]), redis.pid)
    finally:
        for proc in reversed(procs):  # the gateway first, Redis last: nobody loses its queue mid-shutdown
            await served.stop_process(proc)


async def _wait_redis(port: int, proc: asyncio.subprocess.Process, clock: Clock, ready_s: float) -> None:
    deadline = clock.now() + ready_s
    while clock.now() < deadline:
        if proc.returncode is not None:
            raise ServeFailed(f"redis-server exited with {proc.returncode}")
        with contextlib.suppress(OSError, asyncio.IncompleteReadError):
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
            try:
                writer.write(b"PING\r\n")
                if await reader.readline() == b"+PONG\r\n":
                    return
            finally:
                writer.close()
        await clock.sleep(_POLL_S)
    raise ServeFailed(f"redis-server on port {port} did not answer PING within {ready_s:g} s")


async def _wait_workers(url: str, count: int, clock: Clock, ready_s: float) -> None:
    """Until the gateway's /metrics counts `count` ready workers: load before that would only be refused."""
    client = OriginClient(Origin.parse(url))
    deadline = clock.now() + ready_s
    try:
        while clock.now() < deadline:
            with contextlib.suppress(OSError, TimeoutError, ValueError, PeakgateError, asyncio.IncompleteReadError):
                reply = await client.send(_METRICS, 2.0)
                if (parse(reply.body.decode("utf-8", "replace"), 0.0).workers or 0) >= count:
                    return
            await clock.sleep(_POLL_S)
    finally:
        await client.close()
    raise ServeFailed(f"the gateway at {url} did not see {count} ready workers within {ready_s:g} s")
