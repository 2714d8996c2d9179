"""Shared plumbing for the HTTP benchmarks: a server subprocess, a closed-loop client, CPU accounting."""

from __future__ import annotations

import asyncio
import contextlib
import gc
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
            stop_process(proc, 20)
            if sink is not None:
                sink.close()


def stop_process(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM, then SIGKILL if it has not exited within `grace_s`; returns once it is gone."""
    proc.terminate()
    try:
        proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


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


@contextlib.contextmanager
def quiet_collector() -> Iterator[None]:
    """No cyclic garbage collection in the load generator while it measures: a full collection over tens of
    thousands of recorded outcomes stalled it ~40 ms, which read as server latency on every request in flight.
    A run is bounded, so the garbage waits for the end. Nested (a probe run beside a flood), the outer one
    keeps holding it off."""
    if not gc.isenabled():
        yield
        return
    gc.collect()
    gc.freeze()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()


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
    with quiet_collector():
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    return LoadResult(len(latencies), errors, elapsed, latencies)


# --- Outcome-recording clients (status codes, Retry-After, per-class latencies) and /metrics scraping. ---

TIMEOUT = 0  # Outcome.status when the client gave up waiting (no answer, no rejection before its timeout)
CONN_ERROR = -1  # Outcome.status when the connection failed or was closed before an answer


@dataclass(frozen=True, slots=True)
class Probe:
    """One request of a workload: its class label, prepared JSON body, segment count and client timeout."""

    klass: str
    body: bytes
    segments: int
    timeout_s: float = 30.0

    @classmethod
    def of(cls, klass: str, body: dict[str, object], timeout_s: float = 30.0) -> Probe:
        segments = body.get("segments")
        count = len(segments) if isinstance(segments, list) else 1
        return cls(klass, json.dumps(body).encode(), count, timeout_s)


@dataclass(slots=True)
class Outcome:
    klass: str
    status: int  # HTTP status, or TIMEOUT / CONN_ERROR
    segments: int
    sent_at: float  # perf_counter seconds (open loop: the scheduled arrival time)
    done_at: float
    retry_after: bool = False
    payload: bytes | None = None
    retry_after_s: float | None = None  # the Retry-After header's value (seconds form), when sent

    @property
    def latency_s(self) -> float:
        return self.done_at - self.sent_at


async def _exchange(connection: _Connection, path: str, body: bytes) -> tuple[int, dict[bytes, bytes], bytes]:
    """Like `_Connection.post` but also returns the response headers (lower-cased names); reconnects once if a
    kept-alive connection turns out closed by the server before answering."""
    for attempt in (0, 1):
        fresh = connection._writer is None
        if fresh:
            connection._reader, connection._writer = await asyncio.open_connection(connection._host,
                                                                                   connection._port)
        assert connection._reader is not None and connection._writer is not None
        head = (f"POST {path} HTTP/1.1\r\nHost: {connection._host}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        try:
            connection._writer.write(head + body)
            status_line = await connection._reader.readline()
        except (ConnectionError, OSError):
            status_line = b""
        if status_line:
            break
        await connection.close()
        connection._reader = connection._writer = None
        if fresh or attempt:
            raise ConnectionError("server closed the connection before answering")
    headers: dict[bytes, bytes] = {}
    while (line := await connection._reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip()
    payload = await connection._reader.readexactly(int(headers.get(b"content-length", b"0")))
    if headers.get(b"connection", b"").lower() == b"close":
        await connection.close()
        connection._reader = connection._writer = None
    return int(status_line.split()[1]), headers, payload


async def _timed(connection: _Connection, path: str, probe: Probe, sent_at: float, keep_payload: bool) -> Outcome:
    """Send one probe; never raises: a timeout or a broken connection is recorded (and the connection reset)."""
    try:
        status, headers, payload = await asyncio.wait_for(_exchange(connection, path, probe.body), probe.timeout_s)
    except TimeoutError:
        await _reset(connection)
        return Outcome(probe.klass, TIMEOUT, probe.segments, sent_at, time.perf_counter())
    except (ConnectionError, OSError, asyncio.IncompleteReadError, ValueError, IndexError):
        await _reset(connection)
        return Outcome(probe.klass, CONN_ERROR, probe.segments, sent_at, time.perf_counter())
    retry_after = headers.get(b"retry-after")
    seconds = None
    if retry_after is not None:
        with contextlib.suppress(ValueError):
            seconds = float(retry_after)
    return Outcome(probe.klass, status, probe.segments, sent_at, time.perf_counter(),
                   retry_after=retry_after is not None, payload=payload if keep_payload else None,
                   retry_after_s=seconds)


async def _reset(connection: _Connection) -> None:
    with contextlib.suppress(Exception):
        await connection.close()
    connection._reader = connection._writer = None


def _host_port(url: str) -> tuple[str, int]:
    parsed = httpx.URL(url)
    return parsed.host, parsed.port or 80


async def closed_loop_outcomes(
    url: str, probes: Sequence[Probe], concurrency: int, *, path: str = "/v1/translate",
    duration_s: float | None = None, keep_payload: bool = False, retry_rejected_s: float | None = None,
) -> tuple[list[Outcome], float]:
    """`concurrency` clients, each sending its next probe once the last answered; every outcome is recorded.
    With `duration_s`, the clients cycle through `probes` until that much time has passed; else each is sent once.
    Returns the outcomes, in sending order (outcome i answers probe i modulo len(probes)), and the elapsed seconds.
    With `retry_rejected_s`, a 429/503 is recorded, then the same probe is sent again after its Retry-After
    (at most `retry_rejected_s` seconds), as a polite client would; outcomes are then in completion order."""
    host, port = _host_port(url)
    numbered: list[tuple[int, Outcome]] = []
    cursor = 0
    started = time.perf_counter()
    stop_at = started + duration_s if duration_s is not None else None

    async def worker() -> None:
        nonlocal cursor
        connection = _Connection(host, port)
        try:
            while True:
                if stop_at is None:
                    if cursor >= len(probes):
                        return
                elif time.perf_counter() >= stop_at:
                    return
                index = cursor
                cursor += 1
                probe = probes[index % len(probes)]
                while True:
                    outcome = await _timed(connection, path, probe, time.perf_counter(), keep_payload)
                    numbered.append((index, outcome))
                    if retry_rejected_s is None or outcome.status not in (429, 503):
                        break
                    wait = min(retry_rejected_s, outcome.retry_after_s or retry_rejected_s)
                    if stop_at is not None and time.perf_counter() + wait >= stop_at:
                        break
                    await asyncio.sleep(wait)
        finally:
            await _reset(connection)

    with quiet_collector():
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    elapsed = time.perf_counter() - started
    if retry_rejected_s is not None:
        return [outcome for _, outcome in numbered], elapsed
    return [outcome for _, outcome in sorted(numbered, key=lambda pair: pair[0])], elapsed


@dataclass
class OpenLoopResult:
    outcomes: list[Outcome]
    offered: int  # arrivals scheduled in the window
    not_sent: int  # arrivals dropped by the client because `max_inflight` requests were already open
    duration_s: float  # the arrival window
    started: float  # perf_counter at the window's start
    lag_s: float  # the worst delay of a send behind its scheduled arrival (the client falling behind)


async def open_loop(
    url: str, probes: Sequence[Probe], rate: float, duration_s: float, *, seed: int = 0,
    path: str = "/v1/translate", max_inflight: int = 4000,
) -> OpenLoopResult:
    """Poisson arrivals at `rate` req/s for `duration_s`, cycling through `probes`, whatever the answers:
    each arrival takes an idle kept-alive connection or opens one. Latency counts from the scheduled
    arrival (no coordinated omission). Waits for every sent request to end (answer or client timeout)."""
    import random

    host, port = _host_port(url)
    rng = random.Random(seed)
    idle: list[_Connection] = []
    outcomes: list[Outcome] = []
    tasks: set[asyncio.Task[None]] = set()
    offered = not_sent = 0
    lag = 0.0

    async def one(probe: Probe, sent_at: float) -> None:
        connection = idle.pop() if idle else _Connection(host, port)
        outcome = await _timed(connection, path, probe, sent_at, False)
        outcomes.append(outcome)
        if connection._writer is not None:
            idle.append(connection)

    with quiet_collector():
        started = time.perf_counter()
        at = started
        end = started + duration_s
        while True:
            at += rng.expovariate(rate)
            if at >= end:
                break
            delay = at - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            else:
                lag = max(lag, -delay)
            probe = probes[offered % len(probes)]
            offered += 1
            if len(tasks) >= max_inflight:
                not_sent += 1
                continue
            task = asyncio.create_task(one(probe, at))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        while tasks:
            await asyncio.gather(*list(tasks))
    for connection in idle:
        await _reset(connection)
    return OpenLoopResult(outcomes, offered, not_sent, duration_s, started, lag)


def scrape(url: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    """`/metrics` as {(sample name, labels): value} (Prometheus text; comments skipped)."""
    samples: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for line in httpx.get(f"{url}/metrics", timeout=10.0).text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _, value = line.rpartition(" ")
        name, _, rest = head.partition("{")
        labels: set[tuple[str, str]] = set()
        for item in rest.rstrip("}").split('",') if rest else ():
            key, _, val = item.partition("=")
            labels.add((key.strip(), val.strip().strip('"')))
        try:
            samples[(name.strip(), frozenset(labels))] = float(value)
        except ValueError:
            continue
    return samples


def metric(samples: dict[tuple[str, frozenset[tuple[str, str]]], float], name: str, **labels: str) -> float:
    """The sum of `name`'s samples whose labels include `labels` (0.0 when there are none)."""
    wanted = set(labels.items())
    return sum(v for (n, ls), v in samples.items() if n == name and wanted <= ls)


@contextlib.contextmanager
def serve_in_thread(app: object, ready_s: float = 10.0) -> Iterator[str]:
    """Run an ASGI app on uvicorn in a daemon thread on a free 127.0.0.1 port; yield its base URL.

    For tests that need a real HTTP server but not a separate process (stubs, routes built alone).
    """
    import threading

    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    config = uvicorn.Config(app, log_level="warning", ws="none", loop="asyncio",  # type: ignore[arg-type]
                            timeout_graceful_shutdown=2)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + ready_s
    try:
        while not server.started:
            if time.monotonic() > deadline or not thread.is_alive():
                raise RuntimeError(f"in-thread server did not start within {ready_s} s")
            time.sleep(0.01)
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(timeout=ready_s)
        sock.close()
