"""The job store seam: a small protocol and the embedded SQLite default.

Durability model: every call is one short transaction. Source segments are written with the job, and each
translated chunk is committed by `save_chunk` together with the job's progress counters, so a crash loses at
most the chunk that was in flight, and `pending` never hands out a segment that already has a translation.
The input document lives as a blob in the database (one file to back up; documents are capped by
`JobsConfig.max_document_bytes`).

`recover()` is meant for a single node: it re-queues every 'translating' job, which is only right when no other
process is running jobs from the same database.
"""

from __future__ import annotations

import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from peakgate.errors import PeakgateError
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import Job, NewJob

WallClock = Callable[[], float]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS jobs (
    id TEXT PRIMARY KEY,
    key TEXT NOT NULL,
    tenant TEXT NOT NULL,
    kind TEXT NOT NULL,
    status TEXT NOT NULL,
    source TEXT,
    target TEXT NOT NULL,
    filename TEXT,
    format TEXT,
    input BLOB,
    output BLOB,
    billed_characters INTEGER NOT NULL DEFAULT 0,
    segments_total INTEGER NOT NULL,
    segments_done INTEGER NOT NULL DEFAULT 0,
    error_message TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS jobs_queue ON jobs (status, created_at);
CREATE TABLE IF NOT EXISTS segments (
    job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    idx INTEGER NOT NULL,
    source TEXT NOT NULL,
    target TEXT,
    PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;
"""
_JOB_COLUMNS = ("id, key, tenant, kind, status, source, target, filename, format, billed_characters, "
                "segments_total, segments_done, error_message, created_at, updated_at")


class JobStoreError(PeakgateError):
    """The job database failed (locked, corrupt, unwritable) or a job is not in the state a call needs."""

    code = "job_store_error"


class JobStore(Protocol):
    def create(self, job: NewJob) -> Job:
        """Persist a queued job and its source segments in one transaction."""
        ...

    def get(self, job_id: str) -> Job | None: ...

    def claim_next(self) -> Job | None:
        """Atomically move the oldest queued job to 'translating' and return it; None when none is queued."""
        ...

    def pending(self, job_id: str, limit: int) -> list[tuple[int, str]]:
        """Up to `limit` (index, source) pairs still without a translation, in document order."""
        ...

    def save_chunk(self, job_id: str, translations: Sequence[tuple[int, str]], billed_characters: int) -> Job:
        """Store translations and bump progress in one transaction; already translated indices are skipped."""
        ...

    def translations(self, job_id: str) -> list[str | None]:
        """Every segment's translation in order (None where not translated yet)."""
        ...

    def input_data(self, job_id: str) -> bytes | None: ...

    def output(self, job_id: str) -> bytes | None: ...

    def finish(self, job_id: str, output: bytes | None) -> Job: ...

    def fail(self, job_id: str, message: str) -> Job: ...

    def release(self, job_id: str) -> None:
        """Put a 'translating' job back in the queue (a runner stopped before finishing it)."""
        ...

    def recover(self) -> int:
        """At start-up: re-queue every job a crashed process left 'translating'; returns how many."""
        ...

    def close(self) -> None: ...


class SqliteJobStore:
    def __init__(self, path: Path | str, *, wall: WallClock = time.time) -> None:
        self._wall = wall
        self._lock = threading.Lock()  # one connection shared by the loop and any worker thread
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE), never implicit.
            self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across process crashes
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.executescript(_SCHEMA)
        except sqlite3.Error as exc:
            raise JobStoreError(f"cannot open job database {path}: {exc}") from exc

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    yield self._db
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._db.execute("COMMIT")
            except sqlite3.Error as exc:
                raise JobStoreError(f"job database error: {exc}") from exc

    def create(self, job: NewJob) -> Job:
        job_id, now = str(uuid.uuid4()), self._wall()
        with self._tx() as db:
            db.execute(
                "INSERT INTO jobs (id, key, tenant, kind, status, source, target, filename, format, input, "
                "segments_total, created_at, updated_at) VALUES (?, ?, ?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, uuid.uuid4().hex, job.tenant, job.kind, job.source, job.target, job.filename, job.format,
                 job.input_data, len(job.segments), now, now),
            )
            db.executemany("INSERT INTO segments (job_id, idx, source) VALUES (?, ?, ?)",
                           ((job_id, i, text) for i, text in enumerate(job.segments)))
            return _load(db, job_id)

    def get(self, job_id: str) -> Job | None:
        with self._lock:
            return _find(self._db, job_id)

    def claim_next(self) -> Job | None:
        with self._tx() as db:
            row = db.execute("SELECT id FROM jobs WHERE status = 'queued' ORDER BY created_at, rowid LIMIT 1")
            found = row.fetchone()
            if found is None:
                return None
            db.execute("UPDATE jobs SET status = 'translating', updated_at = ? WHERE id = ?",
                       (self._wall(), found[0]))
            return _load(db, found[0])

    def pending(self, job_id: str, limit: int) -> list[tuple[int, str]]:
        with self._lock:
            rows = self._db.execute(
                "SELECT idx, source FROM segments WHERE job_id = ? AND target IS NULL ORDER BY idx LIMIT ?",
                (job_id, limit),
            )
            return [(int(idx), str(source)) for idx, source in rows]

    def save_chunk(self, job_id: str, translations: Sequence[tuple[int, str]], billed_characters: int) -> Job:
        with self._tx() as db:
            saved = 0
            for idx, text in translations:
                # `target IS NULL` makes a replayed chunk a no-op instead of double-counting progress.
                cur = db.execute("UPDATE segments SET target = ? WHERE job_id = ? AND idx = ? AND target IS NULL",
                                 (text, job_id, idx))
                saved += cur.rowcount
            billed = billed_characters if saved else 0
            db.execute("UPDATE jobs SET segments_done = segments_done + ?, billed_characters = billed_characters + ?,"
                       " updated_at = ? WHERE id = ?", (saved, billed, self._wall(), job_id))
            return _load(db, job_id)

    def translations(self, job_id: str) -> list[str | None]:
        with self._lock:
            rows = self._db.execute("SELECT target FROM segments WHERE job_id = ? ORDER BY idx", (job_id,))
            return [None if target is None else str(target) for (target,) in rows]

    def input_data(self, job_id: str) -> bytes | None:
        return self._blob("input", job_id)

    def output(self, job_id: str) -> bytes | None:
        return self._blob("output", job_id)

    def _blob(self, column: str, job_id: str) -> bytes | None:
        with self._lock:
            row = self._db.execute(f"SELECT {column} FROM jobs WHERE id = ?", (job_id,)).fetchone()
            return None if row is None or row[0] is None else bytes(row[0])

    def finish(self, job_id: str, output: bytes | None) -> Job:
        with self._tx() as db:
            db.execute("UPDATE jobs SET status = 'done', output = ?, error_message = NULL, updated_at = ? "
                       "WHERE id = ?", (output, self._wall(), job_id))
            return _load(db, job_id)

    def fail(self, job_id: str, message: str) -> Job:
        with self._tx() as db:
            db.execute("UPDATE jobs SET status = 'error', error_message = ?, updated_at = ? WHERE id = ?",
                       (message, self._wall(), job_id))
            return _load(db, job_id)

    def release(self, job_id: str) -> None:
        with self._tx() as db:
            db.execute("UPDATE jobs SET status = 'queued', updated_at = ? WHERE id = ? AND status = 'translating'",
                       (self._wall(), job_id))

    def recover(self) -> int:
        with self._tx() as db:
            cur = db.execute("UPDATE jobs SET status = 'queued', updated_at = ? WHERE status = 'translating'",
                             (self._wall(),))
            return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _find(db: sqlite3.Connection, job_id: str) -> Job | None:
    row = db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ?", (job_id,)).fetchone()
    return None if row is None else Job(*row)


def _load(db: sqlite3.Connection, job_id: str) -> Job:
    job = _find(db, job_id)
    if job is None:
        raise JobStoreError(f"job {job_id} does not exist")
    return job


def open_store(config: JobsConfig, path: Path | None, *, wall: WallClock = time.time) -> JobStore:
    """The factory, keyed by `config.backend`; `path` as `Settings.store_path` resolved it (None: in memory)."""
    if config.backend == "sqlite":
        if path is None:
            return SqliteJobStore(":memory:", wall=wall)
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteJobStore(path, wall=wall)
    raise JobStoreError(f"unknown job store backend {config.backend!r}")  # unreachable while the Literal holds
