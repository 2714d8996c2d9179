"""Shared plumbing for the HTTP benchmarks: a server subprocess, a closed-loop client, CPU accounting."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import httpx

_CLK_TCK = os.sysconf("SC_CLK_TCK")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _CLK_TCK


@dataclass
class Server:
    url: str
    proc: subprocess.Popen[bytes]


@contextlib.contextmanager
def serve(
    config: dict[str, object] | None, argv: Sequence[str] | None = None, ready_s: float = 60.0,
    log: Path | None = None,
) -> Iterator[Server]:
    """Run `peakgate serve` (or `argv` with {port}) in its own process; yield once it answers.
    Its stdout and stderr go to `log` when given (tests read them), else nowhere."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        if argv is None:
            path = Path(tmp) / "config.json"
            path.write_text(json.dumps(config or {}))
            argv = [sys.executable, "-m", "peakgate.cli", "serve", "--port", str(port), "--config", str(path)]
        else:
            argv = [a.format(port=port) for a in argv]
        sink = log.open("wb") if log is not None else None
        out = sink if sink is not None else subprocess.DEVNULL
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT if sink is not None else out)
        url = f"http://127.0.0.1:{port}"
        try:
            _wait_ready(url, proc, ready_s)
            yield Server(url, proc)
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            if sink is not None:
                sink.close()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], ready_s: float) -> None:
    deadline = time.monotonic() + ready_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"server exited with {proc.returncode}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{url}/readyz", timeout=1.0).status_code == 200:
                return
        time.sleep(0.1)
    raise RuntimeError(f"server at {url} not ready after {ready_s} s")


@dataclass
class LoadResult:
    done: int
    errors: int
    seconds: float
    latencies_s: list[float]

    @property
    def rps(self) -> float:
        return self.done / self.seconds if self.seconds else 0.0

    def percentile(self, q: float) -> float:
        ordered = sorted(self.latencies_s)
        if not ordered:
            return float("nan")
        return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


class _Connection:
    """A minimal keep-alive HTTP/1.1 client connection: the load generator must cost far less than the server.

    httpx spends ~8 ms of CPU per request at 48 connections here, which capped the served figures at the
    client's speed; this one writes a prepared request and reads a Content-Length body, nothing more.
    """

    def __init__(self, host: str, port: int) -> None:
        self._host, self._port = host, port
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: bytes) -> tuple[int, bytes]:
        if self._writer is None:
            self._reader, self._writer = await asyncio.open_connection(self._host, self._port)
        assert self._reader is not None
        head = (f"POST {path} HTTP/1.1\r\nHost: {self._host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        self._writer.write(head + body)
        status_line = await self._reader.readline()
        length = 0
        while (line := await self._reader.readline()) not in (b"\r\n", b""):
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        payload = await self._reader.readexactly(length)
        return int(status_line.split()[1]), payload

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(OSError):
                await self._writer.wait_closed()


async def closed_loop(
    url: str, bodies: Sequence[dict[str, object]], concurrency: int, *, path: str = "/v1/translate",
    stop: asyncio.Event | None = None,
) -> LoadResult:
    """`concurrency` clients, each sending its next body as soon as the last answered, until all are sent
    (or `stop` is set, for background floods that cycle through `bodies`)."""
    encoded = [json.dumps(body).encode() for body in bodies]
    queue: asyncio.Queue[bytes] = asyncio.Queue()
    for body in encoded:
        queue.put_nowait(body)
    latencies: list[float] = []
    errors = 0
    parsed = httpx.URL(url)
    host, port = parsed.host, parsed.port or 80

    async def worker() -> None:
        nonlocal errors
        connection = _Connection(host, port)
        try:
            while not (stop is not None and stop.is_set()):
                try:
                    body = queue.get_nowait()
                except asyncio.QueueEmpty:
                    if stop is None:
                        return
                    body = encoded[len(latencies) % len(encoded)]
                t0 = time.perf_counter()
                status, _ = await connection.post(path, body)
                if status == 200:
                    latencies.append(time.perf_counter() - t0)
                else:
                    errors += 1
        finally:
            await connection.close()

    started = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return LoadResult(len(latencies), errors, elapsed, latencies)
