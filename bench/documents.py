"""A large document through the served API: /healthz latency while it translates against idle, measured in the
same run, another tenant's small document overtaking it, and SIGTERM mid-job followed by a resume.

    python -m bench.documents [--mbytes 20] [--window-s 20] [--engine echo|apertium] [--finish]

1. idle: /healthz probed every `--probe-ms` on a fresh server (stores on disk, as served) for `--idle-s`.
2. upload: a `--mbytes` .txt of short lines ("line 123456", one segment each) as tenant A; the upload's time,
   and /healthz while it is stored.
3. running: /healthz probed for `--window-s` while the job runs; tenant B's 20-line document, submitted at the
   window's start, finishes (or not) before the big one; the big job's throughput.
4. shutdown: SIGTERM mid-job: seconds to exit against `shutdown_grace_s`; a restart on the same data dir resumes
   the job (with `--finish`, to the end, and the result is checked line by line).
Prints p50/p99/max per phase, the running/idle ratios and the server's RSS. Client and server share the cores.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sqlite3
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from bench._http import Server, serve

ECHO: dict[str, object] = {
    "models": [{"name": "echo", "engine": "echo", "source": "en", "target": "es"}],
    "tiers": {"medium": ["echo"]}, "default_tier": "medium",
}
APERTIUM: dict[str, object] = {
    "models": [{"name": "apertium-en-es", "engine": "apertium", "source": "en", "target": "es", "mode": "eng-spa"}],
    "tiers": {"medium": ["apertium-en-es"]}, "default_tier": "medium",
}
KEY_A, KEY_B = "bench-key-a", "bench-key-b"
_UNMETERED = {"rate_chars_per_s": 1e12, "burst_chars": 1e12}


def server_config(engine: dict[str, object], data_dir: Path, *, grace_s: float = 6.0,
                  max_segments: int = 2_000_000) -> dict[str, object]:
    """Two tenants with unmetered keys, stores under `data_dir`, the cache off, documents up to `max_segments`."""
    return dict(engine) | {
        "log_level": "warning", "data_dir": str(data_dir), "shutdown_grace_s": grace_s,
        "cache": {"l1_max_bytes": 1},  # nothing is cached: every chunk does the full trip
        "keys": [{"key": KEY_A, "tenant": "a", **_UNMETERED}, {"key": KEY_B, "tenant": "b", **_UNMETERED}],
        "jobs": {"chunk_segments": 50, "max_document_bytes": 32 * 1024 * 1024, "max_document_segments": max_segments,
                 "idle_poll_s": 0.2},
    }


def short_lines(n: int, tag: str = "line") -> bytes:
    return "".join(f"{tag} {i}\n" for i in range(n)).encode()


def lines_for_mbytes(mbytes: float) -> int:
    """How many `short_lines` make about `mbytes` MB (each line is ~12 bytes at these counts)."""
    return int(mbytes * 1024 * 1024 / 12.5)


@dataclass
class Handle:
    id: str
    key: str
    api_key: str


class Documents:
    """The DeepL document calls, with a tenant's key."""

    def __init__(self, url: str, timeout_s: float = 120.0) -> None:
        self._http = httpx.Client(base_url=url, timeout=timeout_s)

    def close(self) -> None:
        self._http.close()

    def upload(self, api_key: str, name: str, data: bytes) -> Handle:
        reply = self._http.post("/v2/document", headers=_auth(api_key), files={"file": (name, data, "text/plain")},
                                data={"target_lang": "ES", "source_lang": "EN"})
        reply.raise_for_status()
        body = reply.json()
        return Handle(body["document_id"], body["document_key"], api_key)

    def status(self, handle: Handle) -> dict[str, object]:
        reply = self._http.post(f"/v2/document/{handle.id}", headers=_auth(handle.api_key),
                                data={"document_key": handle.key})
        reply.raise_for_status()
        return dict(reply.json())

    def result(self, handle: Handle) -> bytes:
        reply = self._http.post(f"/v2/document/{handle.id}/result", headers=_auth(handle.api_key),
                                data={"document_key": handle.key})
        reply.raise_for_status()
        return reply.content

    def wait_done(self, handle: Handle, timeout_s: float, poll_s: float = 0.2) -> float:
        """Seconds until the document is done; raises if it fails or takes longer than `timeout_s`."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            status = self.status(handle)["status"]
            if status == "done":
                return time.monotonic() - started
            if status == "error":
                raise RuntimeError(f"document {handle.id} failed: {self.status(handle)}")
            time.sleep(poll_s)
        raise TimeoutError(f"document {handle.id} not done after {timeout_s} s")


def _auth(api_key: str) -> dict[str, str]:
    return {"Authorization": f"DeepL-Auth-Key {api_key}"}


@dataclass
class Prober:
    """/healthz every `interval_s` from a thread of its own (uploads and polls do not delay it); a probe that
    gets no answer within `timeout_s` counts as `timeout_s`."""

    url: str
    interval_s: float = 0.02
    timeout_s: float = 5.0
    samples: list[tuple[float, float]] = field(default_factory=list)  # (sent at, seconds)
    _stop: threading.Event = field(default_factory=threading.Event)

    @contextlib.contextmanager
    def running(self) -> Iterator[Prober]:
        thread = threading.Thread(target=self._loop, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join(timeout=self.timeout_s + 1)

    def _loop(self) -> None:
        with httpx.Client(base_url=self.url, timeout=self.timeout_s) as http:
            while not self._stop.is_set():
                sent = time.monotonic()
                try:
                    http.get("/healthz").raise_for_status()
                    took = time.monotonic() - sent
                except httpx.HTTPError:
                    took = self.timeout_s
                self.samples.append((sent, took))
                self._stop.wait(max(0.0, self.interval_s - took))

    def since(self, start: float, end: float | None = None) -> list[float]:
        return [took for sent, took in list(self.samples) if sent >= start and (end is None or sent < end)]


def percentiles(latencies: Sequence[float]) -> tuple[float, float, float]:
    """(p50, p99, max) in milliseconds."""
    if not latencies:
        nan = float("nan")
        return nan, nan, nan
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return statistics.median(ordered) * 1000, p99 * 1000, ordered[-1] * 1000


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def progress(data_dir: Path, handle: Handle) -> tuple[str, int]:
    """The job's status and segments done as the store has them (the DeepL status does not count segments);
    neither is sealed."""
    with contextlib.closing(sqlite3.connect(f"file:{data_dir / 'jobs.sqlite3'}?mode=ro", uri=True)) as db:
        row = db.execute("SELECT status, segments_done FROM jobs WHERE id = ?", (handle.id,)).fetchone()
    return (str(row[0]), int(row[1])) if row else ("missing", 0)


def terminate(server: Server, timeout_s: float = 60.0) -> float:
    """SIGTERM; seconds until the process is gone."""
    started = time.monotonic()
    server.proc.send_signal(signal.SIGTERM)
    server.proc.wait(timeout=timeout_s)
    return time.monotonic() - started


def _row(label: str, latencies: Sequence[float]) -> str:
    p50, p99, worst = percentiles(latencies)
    return f"{label:<34} n={len(latencies):<5} p50 {p50:7.2f} ms  p99 {p99:7.2f} ms  max {worst:8.2f} ms"


def run(args: argparse.Namespace) -> list[str]:
    engine = APERTIUM if args.engine == "apertium" else ECHO
    lines = max(1000, lines_for_mbytes(args.mbytes))
    big = short_lines(lines)
    out = [f"document: {len(big) / 1e6:.1f} MB, {lines} lines (segments); engine {args.engine}"]
    with tempfile.TemporaryDirectory() as tmp:
        data_dir = Path(tmp)
        config = server_config(engine, data_dir, grace_s=args.grace_s)
        with serve(config) as server:
            handle, lines_run = _served(server, data_dir, big, args)
            out += lines_run
            stopped = terminate(server)
        _, done = progress(data_dir, handle)
        out.append(f"SIGTERM mid-job: exited in {stopped:.2f} s (shutdown_grace_s {args.grace_s:g}), "
                   f"{done} segments kept")
        with serve(config) as server:
            out += _resume(server, data_dir, handle, big, args)
    return out


def _served(server: Server, data_dir: Path, big: bytes, args: argparse.Namespace) -> tuple[Handle, list[str]]:
    docs = Documents(server.url)
    rss_idle = rss_mb(server.proc.pid)
    with Prober(server.url, interval_s=args.probe_ms / 1000).running() as prober:
        t0 = time.monotonic()
        time.sleep(args.idle_s)
        t1 = time.monotonic()
        handle = docs.upload(KEY_A, "big.txt", big)
        t2 = time.monotonic()
        small = docs.upload(KEY_B, "small.txt", short_lines(20, "small"))
        small_s = docs.wait_done(small, args.window_s)
        big_at_small = docs.status(handle)["status"]
        time.sleep(max(0.0, args.window_s - (time.monotonic() - t2)))
        t3 = time.monotonic()
        _, done = progress(data_dir, handle)
    idle, upload, running = prober.since(t0, t1), prober.since(t1, t2), prober.since(t2, t3)
    out = [
        _row("/healthz idle", idle), _row("/healthz during the upload", upload),
        _row("/healthz while the document runs", running),
        f"running/idle: p50 x{percentiles(running)[0] / percentiles(idle)[0]:.2f}, "
        f"p99 x{percentiles(running)[1] / percentiles(idle)[1]:.2f}",
        f"upload (store {len(big) / 1e6:.1f} MB): {t2 - t1:.2f} s",
        f"tenant B's 20-line document: done {small_s:.2f} s after its upload, while the big one was "
        f"{big_at_small}",
        f"big document: {done} segments in {t3 - t2:.1f} s ({done / (t3 - t2):.0f} segments/s)",
        f"server RSS: idle {rss_idle:.0f} MB, running {rss_mb(server.proc.pid):.0f} MB",
    ]
    docs.close()
    return handle, out


def _resume(server: Server, data_dir: Path, handle: Handle, big: bytes, args: argparse.Namespace) -> list[str]:
    docs = Documents(server.url)
    _, before = progress(data_dir, handle)
    try:
        if not args.finish:
            time.sleep(2.0)
            return [f"after restart: {progress(data_dir, handle)[1] - before} more segments in 2 s (resumed)"]
        with Prober(server.url, interval_s=args.probe_ms / 1000).running() as prober:
            started = time.monotonic()
            took = docs.wait_done(handle, timeout_s=3600)
        same = docs.result(handle) == big if args.engine == "echo" else None  # echo returns each line as it is
        return [f"after restart: finished {took:.1f} s later; result identical to the input: {same}",
                _row("/healthz to the end (with rebuild)", prober.since(started)),
                f"server RSS once done: {rss_mb(server.proc.pid):.0f} MB"]
    finally:
        docs.close()


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mbytes", type=float, default=20.0, help="document size in MB")
    parser.add_argument("--engine", choices=("echo", "apertium"), default="echo")
    parser.add_argument("--idle-s", type=float, default=5.0, help="idle /healthz window")
    parser.add_argument("--window-s", type=float, default=20.0, help="/healthz window while the document runs")
    parser.add_argument("--probe-ms", type=float, default=20.0, help="/healthz probe interval")
    parser.add_argument("--grace-s", type=float, default=6.0, help="the server's shutdown_grace_s")
    parser.add_argument("--finish", action="store_true", help="after the restart, wait for the whole document")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    for line in run(parser().parse_args(argv)):
        print(line, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
