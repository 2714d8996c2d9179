"""The embedded TM store: one SQLite file in WAL mode, plus the in-memory fuzzy index it keeps in step.

Every `add_many` is one transaction (BEGIN IMMEDIATE … COMMIT): a batch, or a whole TMX file, lands entirely
or not at all. The fuzzy index is loaded at open and updated only after a commit succeeds, so it never holds
an id the database rolled back.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import cast

from peakgate.clock import Clock, MonotonicClock
from peakgate.memory.entry import AddResult, Origin, TmEntry, TmMatch
from peakgate.memory.fuzzy import FuzzyIndex
from peakgate.memory.store import Scope, TmStoreError
from peakgate.memory.text import normalize

_SCHEMA = """
CREATE TABLE IF NOT EXISTS tm_entries (
    id          INTEGER PRIMARY KEY,
    tenant      TEXT NOT NULL,
    source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL,
    source_key  TEXT NOT NULL,
    source      TEXT NOT NULL,
    target      TEXT NOT NULL,
    origin      TEXT NOT NULL,
    model       TEXT,
    score       REAL,
    created_at  TEXT NOT NULL,
    UNIQUE (tenant, source_lang, target_lang, source_key)
)
"""
_COLUMNS = "source_lang, target_lang, source, target, tenant, origin, model, score, created_at"
_KEY = "tenant = ? AND source_lang = ? AND target_lang = ? AND source_key = ?"
_PAGE = 500


def _entry(row: tuple[object, ...]) -> TmEntry:
    sl, tl, src, tgt, tenant, origin, model, score, created = row
    return TmEntry(str(sl), str(tl), str(src), str(tgt), str(tenant), cast(Origin, origin),
                   None if model is None else str(model), None if score is None else float(cast(float, score)),
                   str(created))


def _filters(tenant: str | None, source_lang: str | None, target_lang: str | None) -> tuple[str, list[str]]:
    named = (("tenant", tenant), ("source_lang", source_lang), ("target_lang", target_lang))
    given = [(col, val) for col, val in named if val is not None]
    where = " AND ".join(f"{col} = ?" for col, _ in given)
    return where or "1", [val for _, val in given]


class SqliteTmStore:
    def __init__(self, path: Path, *, index: FuzzyIndex | None = None, clock: Clock | None = None,
                 scope_recheck_s: float = 0.0) -> None:
        self._path = path
        self._clock = clock if clock is not None else MonotonicClock()
        self._scope_recheck_s = scope_recheck_s
        self._scopes_checked_at = float("-inf")
        self._lock = threading.RLock()  # one connection shared by the event loop and worker threads
        self._index = index if index is not None else FuzzyIndex()
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: durable at checkpoints, no torn writes
            self._db.execute("PRAGMA busy_timeout=5000")
            self._db.execute(_SCHEMA)
            self._seen_id = 0  # highest row id the fuzzy index has loaded
            self._scopes: set[Scope] = set()  # scopes holding entries: an exact lookup elsewhere is a miss
            self._data_version = -1  # sqlite's counter of commits by *other* connections
            self.refresh()
        except (sqlite3.Error, OSError) as exc:
            raise TmStoreError(f"cannot open translation memory {path}: {exc}") from exc

    def refresh(self) -> int:
        """Index rows another process (e.g. `peakgate tm import`) added since the last look; returns how many.

        Rows deleted elsewhere need nothing: a fuzzy hit whose row is gone is dropped when it is fetched.
        """
        with self._lock:
            try:
                rows = self._db.execute("SELECT id, tenant, source_lang, target_lang, source_key FROM tm_entries"
                                        " WHERE id > ? ORDER BY id", (self._seen_id,)).fetchall()
            except sqlite3.Error as exc:
                raise TmStoreError(f"translation memory read failed: {exc}") from exc
            for doc_id, tenant, sl, tl, key in rows:
                self._index.add(Scope(tenant, sl, tl), doc_id, key)
            if rows:
                self._seen_id = max(self._seen_id, rows[-1][0])
            return len(rows)

    def add_many(self, entries: Iterable[TmEntry]) -> AddResult:
        with self._lock:
            added: list[tuple[Scope, int, str]] = []
            result = AddResult()
            try:
                self._db.execute("BEGIN IMMEDIATE")
                for entry in entries:
                    result += self._upsert(entry, added)
                self._db.execute("COMMIT")
            except BaseException as exc:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise TmStoreError(f"translation memory write failed: {exc}") from exc
                raise
            for scope, doc_id, key in added:
                self._scopes.add(scope)  # our own commits do not move data_version
                self._index.add(scope, doc_id, key)
                self._seen_id = max(self._seen_id, doc_id)
            return result

    def _upsert(self, e: TmEntry, added: list[tuple[Scope, int, str]]) -> AddResult:
        key = normalize(e.source)
        params = (e.tenant, e.source_lang, e.target_lang, key)
        row = self._db.execute(f"SELECT id, origin FROM tm_entries WHERE {_KEY}", params).fetchone()
        values = (e.source, e.target, e.origin, e.model, e.score, e.created_at)
        if row is None:
            cur = self._db.execute(
                "INSERT INTO tm_entries (tenant, source_lang, target_lang, source_key, source, target, origin,"
                " model, score, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", (*params, *values))
            added.append((Scope(e.tenant, e.source_lang, e.target_lang), int(cast(int, cur.lastrowid)), key))
            return AddResult(inserted=1)
        if row[1] != "model" and not e.human:
            return AddResult(kept=1)  # a machine translation never replaces a human-sourced one
        self._db.execute("UPDATE tm_entries SET source = ?, target = ?, origin = ?, model = ?, score = ?,"
                         " created_at = ? WHERE id = ?", (*values, row[0]))
        return AddResult(updated=1)  # same normalized source, so the fuzzy index entry stands

    def _known_scopes(self) -> set[Scope]:
        # Most lookups hit a scope with no entries at all (e.g. the shared one); one pragma instead of a query
        # per scope. The pragma itself cost ~15 % of a served request's CPU when asked on every lookup, so it is
        # asked at most every scope_recheck_s: a scope another process (`peakgate tm import`) creates is seen
        # that much later; our own commits update the set at once.
        now = self._clock.now()
        if now - self._scopes_checked_at < self._scope_recheck_s:
            return self._scopes
        self._scopes_checked_at = now
        version = self._query_one("PRAGMA data_version", ())
        if version is not None and version[0] != self._data_version:
            try:
                rows = self._db.execute("SELECT DISTINCT tenant, source_lang, target_lang FROM tm_entries").fetchall()
            except sqlite3.Error as exc:
                raise TmStoreError(f"translation memory read failed: {exc}") from exc
            self._scopes = {Scope(*row) for row in rows}
            self._data_version = cast(int, version[0])
        return self._scopes

    def has_entries(self, scope: Scope) -> bool:
        with self._lock:
            return scope in self._known_scopes()

    def exact(self, scope: Scope, source: str) -> TmEntry | None:
        with self._lock:
            if scope not in self._known_scopes():
                return None
            row = self._query_one(f"SELECT {_COLUMNS} FROM tm_entries WHERE {_KEY}", (*scope, normalize(source)))
        return None if row is None else _entry(row)

    def fuzzy(self, scope: Scope, source: str, *, threshold: float, limit: int = 1) -> list[TmMatch]:
        with self._lock:
            hits = self._index.search(scope, source, threshold=threshold, limit=limit)
            matches = []
            for doc_id, score in hits:
                row = self._query_one(f"SELECT {_COLUMNS} FROM tm_entries WHERE id = ?", (doc_id,))
                if row is not None:
                    matches.append(TmMatch("fuzzy", score, _entry(row)))
        return matches

    def _query_one(self, sql: str, params: tuple[object, ...]) -> tuple[object, ...] | None:
        try:
            return cast("tuple[object, ...] | None", self._db.execute(sql, params).fetchone())
        except sqlite3.Error as exc:
            raise TmStoreError(f"translation memory read failed: {exc}") from exc

    def iter_entries(self, *, tenant: str | None = None, source_lang: str | None = None,
                     target_lang: str | None = None) -> Iterator[TmEntry]:
        """Streams in id order, one page per lock hold, so a long export never blocks lookups."""
        where, params = _filters(tenant, source_lang, target_lang)
        last = 0
        while True:
            with self._lock:
                try:
                    rows = self._db.execute(
                        f"SELECT id, {_COLUMNS} FROM tm_entries WHERE {where} AND id > ? ORDER BY id LIMIT ?",
                        (*params, last, _PAGE)).fetchall()
                except sqlite3.Error as exc:
                    raise TmStoreError(f"translation memory read failed: {exc}") from exc
            for row in rows:
                yield _entry(row[1:])
            if len(rows) < _PAGE:
                return
            last = rows[-1][0]

    def count(self, *, tenant: str | None = None, source_lang: str | None = None,
              target_lang: str | None = None) -> int:
        where, params = _filters(tenant, source_lang, target_lang)
        with self._lock:
            row = self._query_one(f"SELECT COUNT(*) FROM tm_entries WHERE {where}", tuple(params))
        return int(cast(int, row[0])) if row else 0

    def delete(self, scope: Scope, source: str) -> bool:
        with self._lock:
            try:
                # fetchall: the statement must finish for autocommit to commit it
                rows = self._db.execute(f"DELETE FROM tm_entries WHERE {_KEY} RETURNING id",
                                        (*scope, normalize(source))).fetchall()
            except sqlite3.Error as exc:
                raise TmStoreError(f"translation memory delete failed: {exc}") from exc
            if not rows:
                return False
            self._index.remove(scope, int(rows[0][0]))
            return True

    def close(self) -> None:
        with self._lock:
            self._db.close()
