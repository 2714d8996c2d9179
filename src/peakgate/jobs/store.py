"""The job store seam: a small protocol and the embedded SQLite default.

Durability model: every call is one short transaction. Each translated chunk is committed by `save_chunk`
together with the job's progress counters, so a crash loses at most the chunk that was in flight, and `pending`
never hands out a segment that already has a translation. The input and output documents live as blobs in the
database (one file to back up; documents are capped by `JobsConfig.max_document_bytes`).

Cost per call does not grow with the document: `pending` reads the untranslated segments through a partial
index (translated rows leave it), progress lives in counters, the documents sit in a table of their own (in the
job's row, every progress update rewrote the whole input), and `create` and `translations` work in pages,
each page its own short hold of the connection. A job is 'loading' (invisible to every call) until `create`
has written all its pages.

Data at rest: segment text, translations and the input and output documents are sealed with the store's
`Sealer`, bound to their job id; ids, counters, languages and timestamps stay readable.

`recover()` is meant for a single node at start-up: it re-queues every 'translating' job and drops every
half-loaded one, which is only right when no other process is running or creating jobs in the same database.
"""

from __future__ import annotations

import secrets
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from itertools import islice
from pathlib import Path
from typing import Protocol, TypeVar

from peakgate.atrest import Sealer
from peakgate.errors import PeakgateError
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import MEDIA_KINDS, DeferralGate, Job, NewJob

WallClock = Callable[[], float]
_T = TypeVar("_T")
PAGE_ROWS = 10_000  # segments per `create` transaction and per `translations` read

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
    source BLOB NOT NULL,
    target BLOB,
    PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS segments_pending ON segments (job_id, idx) WHERE target IS NULL;
CREATE TABLE IF NOT EXISTS files (
    job_id TEXT NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    kind TEXT NOT NULL,  -- 'input', 'output' or a media job's 'layout'
    data BLOB NOT NULL,
    PRIMARY KEY (job_id, kind)
);
"""
_JOB_COLUMNS = ("id, key, tenant, kind, status, source, target, filename, format, billed_characters, "
                "segments_total, segments_done, error_message, created_at, updated_at, may_defer, latest_finish, "
                "glossary_id")
# Columns added after the first release: a database an older one made gets them at open.
_ADDED_COLUMNS = {"may_defer": "INTEGER NOT NULL DEFAULT 0", "latest_finish": "REAL",  # may_defer: deferrable
                  "glossary_id": "TEXT"}
_EVERY_JOB = DeferralGate(off_peak=True, now_wall_s=0.0, s_per_segment=0.0, margin_s=0.0)  # no gate: none held
_WAL_LIMIT_BYTES = 64 * 1024 * 1024  # the WAL file shrinks back to this after a checkpoint
RECOGNITION_LOST = "the server stopped while recognising this file; submit it again"


class JobStoreError(PeakgateError):
    """The job database failed (locked, corrupt, unwritable) or a job is not in the state a call needs."""

    code = "job_store_error"


class JobStore(Protocol):
    def create(self, job: NewJob) -> Job:
        """Persist a queued job and its source segments; visible only once every segment is written."""
        ...

    def get(self, job_id: str) -> Job | None: ...

    def claim_next(self, exclude_tenants: Collection[str] = (), gate: DeferralGate | None = None) -> Job | None:
        """Atomically move the oldest queued job (of a tenant not excluded, and, with a `gate`, not a deferrable
        one the gate holds back) to 'translating' and return it."""
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

    def recognised(self, job_id: str, segments: Sequence[str], layout: bytes) -> Job:
        """A media job's recognised text: its segments, and `layout` (where each was found, for its answer);
        moves it from 'recognising' to 'queued'."""
        ...

    def input_data(self, job_id: str) -> bytes | None: ...

    def output(self, job_id: str) -> bytes | None: ...

    def layout(self, job_id: str) -> bytes | None: ...

    def finish(self, job_id: str, output: bytes | None) -> Job: ...

    def fail(self, job_id: str, message: str) -> Job: ...

    def release(self, job_id: str) -> None:
        """Put a 'translating' job back in the queue (a runner stopped before finishing it)."""
        ...

    def recover(self) -> int:
        """At start-up: re-queue every job a crashed process left 'translating' (returns how many), and fail
        every media job it left 'recognising'."""
        ...

    def close(self) -> None: ...


class SqliteJobStore:
    """One connection, shared by whichever threads call (the runner calls from worker threads).

    `sealer` must be the same across restarts for a file that is kept (`stores.open_stores` passes the
    configured one); the default key lives as long as this object.
    """

    def __init__(self, path: Path | str, *, wall: WallClock = time.time, sealer: Sealer | None = None) -> None:
        self._wall = wall
        self._sealer = sealer or Sealer.ephemeral()
        self._lock = threading.Lock()
        try:
            # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE), never implicit.
            self._db = sqlite3.connect(str(path), isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable across process crashes
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute(f"PRAGMA journal_size_limit={_WAL_LIMIT_BYTES}")
            self._db.executescript(_SCHEMA)
            _add_missing_columns(self._db)
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

    def _read(self, query: Callable[[sqlite3.Connection], _T]) -> _T:
        with self._lock:
            try:
                return query(self._db)
            except sqlite3.Error as exc:
                raise JobStoreError(f"job database error: {exc}") from exc

    def create(self, job: NewJob) -> Job:
        job_id, now = new_job_id(), self._wall()
        sealed_input = None if job.input_data is None else self._sealer.seal(job.input_data, job_id.encode())
        with self._tx() as db:
            db.execute(
                "INSERT INTO jobs (id, key, tenant, kind, status, source, target, filename, format, "
                "segments_total, created_at, updated_at, may_defer, latest_finish, glossary_id) "
                "VALUES (?, ?, ?, ?, 'loading', ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (job_id, new_job_key(), job.tenant, job.kind, job.source, job.target, job.filename, job.format,
                 len(job.segments), now, now, int(job.deferrable), job.latest_finish, job.glossary_id),
            )
            if sealed_input is not None:
                db.execute("INSERT INTO files (job_id, kind, data) VALUES (?, 'input', ?)", (job_id, sealed_input))
        try:
            self._write_segments(job_id, job.segments)
            with self._tx() as db:
                db.execute("UPDATE jobs SET status = ? WHERE id = ?",
                           ("recognising" if job.kind in MEDIA_KINDS else "queued", job_id))
                return _load(db, job_id)
        except BaseException:
            with self._tx() as db:
                db.execute("DELETE FROM jobs WHERE id = ?", (job_id,))
            raise

    def _write_segments(self, job_id: str, segments: Sequence[str]) -> None:
        context = job_id.encode()
        rows = ((job_id, i, self._sealer.seal_text(text, context)) for i, text in enumerate(segments))
        for page in _pages(rows, PAGE_ROWS):  # sealed before the lock is taken, written in one transaction
            with self._tx() as db:
                db.executemany("INSERT INTO segments (job_id, idx, source) VALUES (?, ?, ?)", page)

    def recognised(self, job_id: str, segments: Sequence[str], layout: bytes) -> Job:
        with self._tx() as db:
            if db.execute("SELECT 1 FROM jobs WHERE id = ? AND status = 'recognising'", (job_id,)).fetchone() is None:
                raise JobStoreError(f"job {job_id} is not waiting for its recognised text")
        self._write_segments(job_id, segments)
        sealed = self._sealer.seal(layout, job_id.encode())
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO files (job_id, kind, data) VALUES (?, 'layout', ?)", (job_id, sealed))
            db.execute("UPDATE jobs SET status = 'queued', segments_total = ?, updated_at = ? "
                       "WHERE id = ? AND status = 'recognising'", (len(segments), self._wall(), job_id))
            return _load(db, job_id)

    def get(self, job_id: str) -> Job | None:
        return self._read(lambda db: _find(db, job_id))

    def claim_next(self, exclude_tenants: Collection[str] = (), gate: DeferralGate | None = None) -> Job | None:
        excluded = tuple(exclude_tenants)
        gate = gate or _EVERY_JOB
        with self._tx() as db:
            found = db.execute(
                "SELECT id FROM jobs WHERE status = 'queued' AND tenant NOT IN "
                f"({', '.join('?' * len(excluded))}) AND (may_defer = 0 OR ? "
                "OR latest_finish - (segments_total - segments_done) * ? <= ?) ORDER BY created_at, rowid LIMIT 1",
                (*excluded, gate.off_peak, gate.s_per_segment, gate.now_wall_s + gate.margin_s),
            ).fetchone()
            if found is None:
                return None
            db.execute("UPDATE jobs SET status = 'translating', updated_at = ? WHERE id = ?",
                       (self._wall(), found[0]))
            return _load(db, found[0])

    def pending(self, job_id: str, limit: int) -> list[tuple[int, str]]:
        # Only untranslated rows are in the partial index. The planner would pick the primary key instead (it
        # covers the query), which walks every translated row first: a cost growing with the job's progress.
        rows = self._read(lambda db: db.execute(
            "SELECT idx, source FROM segments INDEXED BY segments_pending WHERE job_id = ? AND target IS NULL "
            "ORDER BY idx LIMIT ?",
            (job_id, limit)).fetchall())
        context = job_id.encode()
        return [(int(idx), self._sealer.open_text(source, context)) for idx, source in rows]

    def save_chunk(self, job_id: str, translations: Sequence[tuple[int, str]], billed_characters: int) -> Job:
        context = job_id.encode()
        sealed = [(self._sealer.seal_text(text, context), job_id, idx) for idx, text in translations]
        with self._tx() as db:
            saved = 0
            for row in sealed:
                # `target IS NULL` makes a replayed chunk a no-op instead of double-counting progress.
                saved += db.execute("UPDATE segments SET target = ? WHERE job_id = ? AND idx = ? AND target IS NULL",
                                    row).rowcount
            billed = billed_characters if saved else 0
            db.execute("UPDATE jobs SET segments_done = segments_done + ?, billed_characters = billed_characters + ?,"
                       " updated_at = ? WHERE id = ?", (saved, billed, self._wall(), job_id))
            return _load(db, job_id)

    def translations(self, job_id: str) -> list[str | None]:
        context = job_id.encode()
        out: list[str | None] = []
        while page := self._targets(job_id, len(out)):  # indices run 0..n-1: the next page starts at len(out)
            out.extend(None if target is None else self._sealer.open_text(target, context) for (target,) in page)
        return out

    def _targets(self, job_id: str, start: int) -> list[tuple[bytes | None]]:
        return self._read(lambda db: db.execute(
            "SELECT target FROM segments WHERE job_id = ? AND idx >= ? ORDER BY idx LIMIT ?",
            (job_id, start, PAGE_ROWS)).fetchall())

    def input_data(self, job_id: str) -> bytes | None:
        return self._blob("input", job_id)

    def output(self, job_id: str) -> bytes | None:
        return self._blob("output", job_id)

    def layout(self, job_id: str) -> bytes | None:
        return self._blob("layout", job_id)

    def _blob(self, kind: str, job_id: str) -> bytes | None:
        row = self._read(lambda db: db.execute(
            "SELECT data FROM files JOIN jobs ON jobs.id = files.job_id "
            "WHERE job_id = ? AND files.kind = ? AND status != 'loading'", (job_id, kind)).fetchone())
        return None if row is None else self._sealer.open(row[0], job_id.encode())

    def finish(self, job_id: str, output: bytes | None) -> Job:
        sealed = None if output is None else self._sealer.seal(output, job_id.encode())
        with self._tx() as db:
            db.execute("UPDATE jobs SET status = 'done', error_message = NULL, updated_at = ? WHERE id = ?",
                       (self._wall(), job_id))
            if sealed is not None:
                db.execute("INSERT OR REPLACE INTO files (job_id, kind, data) VALUES (?, 'output', ?)",
                           (job_id, sealed))
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
            db.execute("DELETE FROM jobs WHERE status = 'loading'")  # a create the crash cut short
            # Recognition ran in the stopped process's media pool: nothing resumes it, so say so (never a silent drop).
            db.execute("UPDATE jobs SET status = 'error', error_message = ?, updated_at = ? "
                       "WHERE status = 'recognising'", (RECOGNITION_LOST, self._wall()))
            cur = db.execute("UPDATE jobs SET status = 'queued', updated_at = ? WHERE status = 'translating'",
                             (self._wall(),))
            return cur.rowcount

    def close(self) -> None:
        with self._lock:
            self._db.close()


def new_job_id() -> str:
    """DeepL's `document_id` shape: 32 upper-case hex digits (a random UUID's)."""
    return uuid.uuid4().hex.upper()


def new_job_key() -> str:
    """DeepL's `document_key` shape: 64 upper-case hex digits, 256 random bits."""
    return secrets.token_hex(32).upper()


def _pages(rows: Iterable[_T], size: int) -> Iterator[list[_T]]:
    iterator = iter(rows)
    while page := list(islice(iterator, size)):
        yield page


def _add_missing_columns(db: sqlite3.Connection) -> None:
    present = {row[1] for row in db.execute("PRAGMA table_info(jobs)")}
    for name, declaration in _ADDED_COLUMNS.items():
        if name not in present:
            db.execute(f"ALTER TABLE jobs ADD COLUMN {name} {declaration}")


def _find(db: sqlite3.Connection, job_id: str) -> Job | None:
    row = db.execute(f"SELECT {_JOB_COLUMNS} FROM jobs WHERE id = ? AND status != 'loading'", (job_id,)).fetchone()
    if row is None:
        return None
    *fields, may_defer, latest_finish, glossary_id = row
    return replace(Job(*fields), deferrable=bool(may_defer), latest_finish=latest_finish,  # stored as 0 or 1
                   glossary_id=glossary_id)


def _load(db: sqlite3.Connection, job_id: str) -> Job:
    job = _find(db, job_id)
    if job is None:
        raise JobStoreError(f"job {job_id} does not exist")
    return job


def open_store(config: JobsConfig, path: Path | None, *, wall: WallClock = time.time,
               sealer: Sealer | None = None) -> JobStore:
    """The factory, keyed by `config.backend`; `path` as `Settings.store_path` resolved it (None: in memory)."""
    if config.backend == "sqlite":
        if path is None:
            return SqliteJobStore(":memory:", wall=wall, sealer=sealer)
        path.parent.mkdir(parents=True, exist_ok=True)
        return SqliteJobStore(path, wall=wall, sealer=sealer)
    raise JobStoreError(f"unknown job store backend {config.backend!r}")  # unreachable while the Literal holds
