"""Glossary storage: a small Protocol and its SQLite implementation, every row owned by one tenant.

A tenant only ever sees its own glossaries: another tenant's id answers `NotFound`, exactly like an id
that never existed, so ids cannot be probed. Each create is one transaction, so a failed create (a
duplicate term, a full disk) leaves nothing behind. Every call opens its own short-lived connection,
which makes the store safe to call from worker threads (the API runs it off the event loop).

Data at rest: names and terms are sealed with the store's `Sealer`, bound to their glossary id (rows an older
release wrote in the clear are sealed when the store opens); ids, languages and counts stay readable.
"""

from __future__ import annotations

import contextlib
import sqlite3
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, Protocol

from peakgate.atrest import Sealer
from peakgate.errors import BadRequest, ConfigError, NotFound, PeakgateError
from peakgate.glossary.entries import Entry, InvalidEntries

GlossaryStoreKind = Literal["sqlite", "memory"]
WallClock = Callable[[], datetime]
MAX_GLOSSARIES = 1000  # per tenant, as DeepL allows per account
MAX_NAME_BYTES = 1024

_SCHEMA = """
CREATE TABLE IF NOT EXISTS glossaries (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, name TEXT NOT NULL, source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL, creation_time TEXT NOT NULL, entry_count INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS glossaries_by_tenant ON glossaries (tenant, creation_time);
CREATE TABLE IF NOT EXISTS entries (
    glossary_id TEXT NOT NULL REFERENCES glossaries (id) ON DELETE CASCADE,
    position INTEGER NOT NULL, source BLOB NOT NULL, target BLOB NOT NULL,
    PRIMARY KEY (glossary_id, position)
);
"""
_COLUMNS = "id, name, source_lang, target_lang, creation_time, entry_count"
_SEALED_SCHEMA = 1  # `PRAGMA user_version` from which every name and term is sealed


class GlossaryStoreError(PeakgateError):
    code = "glossary_store_error"


class GlossaryNotFound(NotFound):
    code = "glossary_not_found"


class TooManyGlossaries(BadRequest):
    code = "too_many_glossaries"


@dataclass(frozen=True, slots=True)
class Glossary:
    glossary_id: str
    name: str
    source_lang: str  # lower-case base codes, e.g. "en"
    target_lang: str
    creation_time: str  # ISO 8601 UTC with milliseconds, e.g. "2026-12-04T03:04:05.123Z"
    entry_count: int
    ready: bool = True  # created synchronously, so always usable at once


class GlossaryStore(Protocol):
    def create(self, tenant: str, name: str, source_lang: str, target_lang: str,
               entries: Sequence[Entry]) -> Glossary: ...

    def glossaries(self, tenant: str) -> list[Glossary]:
        """The tenant's glossaries, oldest first."""

    def get(self, tenant: str, glossary_id: str) -> Glossary:
        """Raises `GlossaryNotFound` for an unknown id or one another tenant owns."""

    def entries(self, tenant: str, glossary_id: str) -> tuple[Entry, ...]: ...

    def delete(self, tenant: str, glossary_id: str) -> None: ...

    def close(self) -> None: ...


def iso_utc(moment: datetime) -> str:
    """The timestamp shape DeepL answers and its SDKs parse (`%Y-%m-%dT%H:%M:%S.%f%z`)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def utc_now() -> datetime:
    return datetime.now(UTC)


class SqliteGlossaryStore:
    """`sealer` must be the same across restarts for a file that is kept (`stores.open_stores` passes the
    configured one); the default key lives as long as this object."""

    def __init__(self, target: str, *, uri: bool = False, wall: WallClock = utc_now,
                 max_glossaries: int = MAX_GLOSSARIES, sealer: Sealer | None = None) -> None:
        self._target, self._uri, self._wall, self._max = target, uri, wall, max_glossaries
        self._sealer = sealer or Sealer.ephemeral()
        # A shared in-memory database lives only while one connection to it is open: keep one.
        self._keeper = self._open() if uri else None
        with self._connection() as conn:
            conn.executescript(_SCHEMA)
            self._seal_plain_rows(conn)

    def _seal_plain_rows(self, conn: sqlite3.Connection) -> None:
        if conn.execute("PRAGMA user_version").fetchone()[0] >= _SEALED_SCHEMA:
            return  # sealed already: no scan of every entry at each start
        names = conn.execute("SELECT id, name FROM glossaries WHERE typeof(name) = 'text'").fetchall()
        conn.executemany("UPDATE glossaries SET name = ? WHERE id = ?",
                         [(self._seal(gid, name), gid) for gid, name in names])
        terms = conn.execute("SELECT glossary_id, position, source, target FROM entries "
                             "WHERE typeof(source) = 'text'").fetchall()
        conn.executemany("UPDATE entries SET source = ?, target = ? WHERE glossary_id = ? AND position = ?",
                         [(self._seal(gid, s), self._seal(gid, t), gid, pos) for gid, pos, s, t in terms])
        conn.execute(f"PRAGMA user_version = {_SEALED_SCHEMA}")

    def _seal(self, glossary_id: str, text: str) -> bytes:
        return self._sealer.seal_text(text, glossary_id.encode())

    def _unseal(self, glossary_id: str, sealed: bytes) -> str:
        return self._sealer.open_text(sealed, glossary_id.encode())

    def _row(self, row: tuple[str, bytes, str, str, str, int]) -> Glossary:
        glossary_id, name, source_lang, target_lang, creation_time, entry_count = row
        return Glossary(glossary_id, self._unseal(glossary_id, name), source_lang, target_lang, creation_time,
                        entry_count)

    def _open(self) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self._target, uri=self._uri, check_same_thread=False)
        except sqlite3.Error as exc:
            raise GlossaryStoreError(f"cannot open the glossary database: {exc}") from exc
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute("PRAGMA secure_delete = ON")  # text replaced by its sealed form leaves no copy in free pages
        return conn

    @contextlib.contextmanager
    def _connection(self) -> Iterator[sqlite3.Connection]:
        """One transaction: committed when the block ends, rolled back when it raises."""
        conn = self._open()
        try:
            with conn:
                yield conn
        except sqlite3.IntegrityError as exc:
            raise InvalidEntries(f"glossary entries are invalid: {exc}") from exc
        except sqlite3.Error as exc:
            raise GlossaryStoreError(f"glossary database error: {exc}") from exc
        finally:
            conn.close()

    def create(self, tenant: str, name: str, source_lang: str, target_lang: str,
               entries: Sequence[Entry]) -> Glossary:
        name = name.strip()
        if not name or len(name.encode()) > MAX_NAME_BYTES:
            raise BadRequest(f"glossary name must be 1 to {MAX_NAME_BYTES} bytes")
        if not entries:
            raise InvalidEntries("glossary has no entries")
        if len({e.source for e in entries}) != len(entries):  # sealed terms all differ: no UNIQUE can catch it
            raise InvalidEntries("glossary entries repeat a source term")
        glossary = Glossary(str(uuid.uuid4()), name, source_lang, target_lang, iso_utc(self._wall()), len(entries))
        gid = glossary.glossary_id
        with self._connection() as conn:
            (count,) = conn.execute("SELECT count(*) FROM glossaries WHERE tenant = ?", (tenant,)).fetchone()
            if count >= self._max:
                raise TooManyGlossaries(f"at most {self._max} glossaries per account: delete one first")
            conn.execute(f"INSERT INTO glossaries (tenant, {_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                         (tenant, gid, self._seal(gid, name), source_lang, target_lang, glossary.creation_time,
                          glossary.entry_count))
            conn.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)",
                             ((gid, i, self._seal(gid, e.source), self._seal(gid, e.target))
                              for i, e in enumerate(entries)))
        return glossary

    def glossaries(self, tenant: str) -> list[Glossary]:
        with self._connection() as conn:
            rows = conn.execute(f"SELECT {_COLUMNS} FROM glossaries WHERE tenant = ? ORDER BY creation_time, rowid",
                                (tenant,)).fetchall()
        return [self._row(r) for r in rows]

    def get(self, tenant: str, glossary_id: str) -> Glossary:
        with self._connection() as conn:
            row = conn.execute(f"SELECT {_COLUMNS} FROM glossaries WHERE tenant = ? AND id = ?",
                               (tenant, glossary_id)).fetchone()
        if row is None:
            raise GlossaryNotFound(f"glossary {glossary_id!r} not found")
        return self._row(row)

    def entries(self, tenant: str, glossary_id: str) -> tuple[Entry, ...]:
        self.get(tenant, glossary_id)  # ownership first: an empty answer must not mean "someone else's"
        with self._connection() as conn:
            rows = conn.execute("SELECT source, target FROM entries WHERE glossary_id = ? ORDER BY position",
                                (glossary_id,)).fetchall()
        return tuple(Entry(self._unseal(glossary_id, s), self._unseal(glossary_id, t)) for s, t in rows)

    def delete(self, tenant: str, glossary_id: str) -> None:
        with self._connection() as conn:
            gone = conn.execute("DELETE FROM glossaries WHERE tenant = ? AND id = ?", (tenant, glossary_id)).rowcount
        if not gone:
            raise GlossaryNotFound(f"glossary {glossary_id!r} not found")

    def close(self) -> None:
        if self._keeper is not None:
            self._keeper.close()
            self._keeper = None


def build_glossary_store(kind: GlossaryStoreKind, path: Path | str | None = None, *,
                         wall: WallClock = utc_now, sealer: Sealer | None = None) -> GlossaryStore:
    """`sqlite` keeps glossaries in the file at `path`; `memory` keeps them for this process only (tests, dev)."""
    match kind:
        case "sqlite":
            if path is None:
                raise ConfigError("the sqlite glossary store needs a path")
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            return SqliteGlossaryStore(str(path), wall=wall, sealer=sealer)
        case "memory":
            return SqliteGlossaryStore(f"file:glossaries-{uuid.uuid4().hex}?mode=memory&cache=shared", uri=True,
                                       wall=wall, sealer=sealer)
