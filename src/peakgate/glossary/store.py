"""Glossary storage: a small Protocol and its SQLite implementation, every row owned by one tenant.

A glossary holds one dictionary per language pair (DeepL's v3 model; a v2 glossary is one with a single
dictionary). A tenant only ever sees its own glossaries: another tenant's id answers `NotFound`, exactly like an
id that never existed, so ids cannot be probed. Each change is one transaction, so a failed create (a duplicate
term, a full disk) leaves nothing behind. Every call opens its own short-lived connection, which makes the store
safe to call from worker threads (the API runs it off the event loop).

Data at rest: names and terms are sealed with the store's `Sealer`, bound to their glossary id (rows an older
release wrote in the clear are sealed when the store opens); ids, languages and counts stay readable.
"""

from __future__ import annotations

import contextlib
import secrets
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
from peakgate.glossary.schema import migrate

GlossaryStoreKind = Literal["sqlite", "memory"]
WallClock = Callable[[], datetime]
MAX_GLOSSARIES = 1000  # per tenant, as DeepL allows per account
MAX_NAME_BYTES = 1024
_PAIR = "glossary_id = ? AND source_lang = ? AND target_lang = ?"


class GlossaryStoreError(PeakgateError):
    code = "glossary_store_error"


class GlossaryNotFound(NotFound):
    code = "glossary_not_found"


class DictionaryNotFound(NotFound):
    code = "glossary_dictionary_not_found"


class TooManyGlossaries(BadRequest):
    code = "too_many_glossaries"


@dataclass(frozen=True, slots=True)
class Dictionary:
    source_lang: str  # lower-case base codes, e.g. "en"
    target_lang: str
    entry_count: int
    revision: int = 0  # a new random value at every write of its entries: caches key on it


@dataclass(frozen=True, slots=True)
class DictionaryEntries:
    """A dictionary as a caller hands it in."""

    source_lang: str
    target_lang: str
    entries: Sequence[Entry]


@dataclass(frozen=True, slots=True)
class Glossary:
    glossary_id: str
    name: str
    creation_time: str  # ISO 8601 UTC with milliseconds, e.g. "2026-12-04T03:04:05.123Z"
    dictionaries: tuple[Dictionary, ...]  # sorted by pair
    ready: bool = True  # created synchronously, so always usable at once

    def dictionary(self, source_lang: str, target_lang: str) -> Dictionary | None:
        return next((d for d in self.dictionaries if (d.source_lang, d.target_lang) == (source_lang, target_lang)),
                    None)

    @property
    def single(self) -> Dictionary | None:
        """The dictionary of a single-pair (v2) glossary; None when it has several, or none."""
        return self.dictionaries[0] if len(self.dictionaries) == 1 else None


class GlossaryStore(Protocol):
    def create(self, tenant: str, name: str, dictionaries: Sequence[DictionaryEntries]) -> Glossary: ...

    def glossaries(self, tenant: str) -> list[Glossary]:
        """The tenant's glossaries, oldest first."""

    def get(self, tenant: str, glossary_id: str) -> Glossary:
        """Raises `GlossaryNotFound` for an unknown id or one another tenant owns."""

    def entries(self, tenant: str, glossary_id: str, source_lang: str, target_lang: str) -> tuple[Entry, ...]:
        """Raises `DictionaryNotFound` when the glossary has no dictionary for the pair."""

    def rename(self, tenant: str, glossary_id: str, name: str) -> Glossary: ...

    def put_dictionary(self, tenant: str, glossary_id: str, dictionary: DictionaryEntries, *,
                       merge: bool = False) -> Dictionary:
        """Replace the pair's dictionary (or add it); `merge` keeps its other entries, new targets winning."""

    def delete_dictionary(self, tenant: str, glossary_id: str, source_lang: str, target_lang: str) -> None: ...

    def delete(self, tenant: str, glossary_id: str) -> None: ...

    def close(self) -> None: ...


def iso_utc(moment: datetime) -> str:
    """The timestamp shape DeepL answers and its SDKs parse (`%Y-%m-%dT%H:%M:%S.%f%z`)."""
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def utc_now() -> datetime:
    return datetime.now(UTC)


def _checked_name(name: str) -> str:
    name = name.strip()
    if not name or len(name.encode()) > MAX_NAME_BYTES:
        raise BadRequest(f"glossary name must be 1 to {MAX_NAME_BYTES} bytes")
    return name


def _checked_entries(entries: Sequence[Entry]) -> None:
    if not entries:
        raise InvalidEntries("glossary has no entries")
    if len({e.source for e in entries}) != len(entries):  # sealed terms all differ: no UNIQUE can catch it
        raise InvalidEntries("glossary entries repeat a source term")


def _merged(old: Sequence[Entry], new: Sequence[Entry]) -> list[Entry]:
    """DeepL's PATCH: new sources appended, known ones take the new target, the rest stay in place."""
    targets = {e.source: e.target for e in new}
    kept = [Entry(e.source, targets.pop(e.source, e.target)) for e in old]
    return kept + [e for e in new if e.source in targets]


class SqliteGlossaryStore:
    """`sealer` must be the same across restarts for a file that is kept (`stores.open_stores` passes the
    configured one); the default key lives as long as this object."""

    def __init__(self, target: str, *, uri: bool = False, wall: WallClock = utc_now,
                 max_glossaries: int = MAX_GLOSSARIES, sealer: Sealer | None = None) -> None:
        self._target, self._uri, self._wall, self._max = target, uri, wall, max_glossaries
        self._sealer = sealer or Sealer.ephemeral()
        # A shared in-memory database lives only while one connection to it is open: keep one.
        self._keeper = self._open(foreign_keys=False) if uri else None
        conn = self._keeper or self._open(foreign_keys=False)
        conn.isolation_level = None  # autocommit: the migration manages its own transactions
        try:
            migrate(conn, self._seal_plain_rows)
        except sqlite3.Error as exc:
            raise GlossaryStoreError(f"cannot migrate the glossary database: {exc}") from exc
        finally:
            conn.isolation_level = "DEFERRED"  # sqlite3's default again, for the keeper
            if conn is not self._keeper:
                conn.close()

    def _seal_plain_rows(self, conn: sqlite3.Connection) -> None:
        """The oldest layout kept names and terms in the clear (single-pair tables)."""
        names = conn.execute("SELECT id, name FROM glossaries WHERE typeof(name) = 'text'").fetchall()
        conn.executemany("UPDATE glossaries SET name = ? WHERE id = ?",
                         [(self._seal(gid, name), gid) for gid, name in names])
        terms = conn.execute("SELECT glossary_id, position, source, target FROM entries "
                             "WHERE typeof(source) = 'text'").fetchall()
        conn.executemany("UPDATE entries SET source = ?, target = ? WHERE glossary_id = ? AND position = ?",
                         [(self._seal(gid, s), self._seal(gid, t), gid, pos) for gid, pos, s, t in terms])

    def _seal(self, glossary_id: str, text: str) -> bytes:
        return self._sealer.seal_text(text, glossary_id.encode())

    def _unseal(self, glossary_id: str, sealed: bytes) -> str:
        return self._sealer.open_text(sealed, glossary_id.encode())

    def _open(self, *, foreign_keys: bool = True) -> sqlite3.Connection:
        try:
            conn = sqlite3.connect(self._target, uri=self._uri, check_same_thread=False)
        except sqlite3.Error as exc:
            raise GlossaryStoreError(f"cannot open the glossary database: {exc}") from exc
        conn.execute(f"PRAGMA foreign_keys = {'ON' if foreign_keys else 'OFF'}")
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

    def _load(self, conn: sqlite3.Connection, tenant: str, glossary_id: str) -> Glossary:
        row = conn.execute("SELECT name, creation_time FROM glossaries WHERE tenant = ? AND id = ?",
                           (tenant, glossary_id)).fetchone()
        if row is None:
            raise GlossaryNotFound(f"glossary {glossary_id!r} not found")
        dictionaries = conn.execute(
            "SELECT source_lang, target_lang, entry_count, revision FROM dictionaries WHERE glossary_id = ? "
            "ORDER BY source_lang, target_lang", (glossary_id,)).fetchall()
        return Glossary(glossary_id, self._unseal(glossary_id, row[0]), row[1],
                        tuple(Dictionary(*d) for d in dictionaries))

    def _write_entries(self, conn: sqlite3.Connection, glossary_id: str, dictionary: DictionaryEntries
                       ) -> Dictionary:
        # Random, not a counter: a dictionary deleted and made again must not reuse an old revision.
        revision = secrets.randbits(62)
        pair = (glossary_id, dictionary.source_lang, dictionary.target_lang)
        conn.execute(f"DELETE FROM dictionaries WHERE {_PAIR}", pair)  # its entries go with it (cascade)
        conn.execute("INSERT INTO dictionaries VALUES (?, ?, ?, ?, ?)", (*pair, len(dictionary.entries), revision))
        conn.executemany("INSERT INTO dictionary_entries VALUES (?, ?, ?, ?, ?, ?)",
                         ((*pair, i, self._seal(glossary_id, e.source), self._seal(glossary_id, e.target))
                          for i, e in enumerate(dictionary.entries)))
        return Dictionary(dictionary.source_lang, dictionary.target_lang, len(dictionary.entries), revision)

    def create(self, tenant: str, name: str, dictionaries: Sequence[DictionaryEntries]) -> Glossary:
        name = _checked_name(name)
        if not dictionaries:
            raise BadRequest("a glossary needs at least one dictionary")
        if len({(d.source_lang, d.target_lang) for d in dictionaries}) != len(dictionaries):
            raise BadRequest("a glossary has at most one dictionary per language pair")
        for dictionary in dictionaries:
            _checked_entries(dictionary.entries)
        gid, creation_time = str(uuid.uuid4()), iso_utc(self._wall())
        with self._connection() as conn:
            (count,) = conn.execute("SELECT count(*) FROM glossaries WHERE tenant = ?", (tenant,)).fetchone()
            if count >= self._max:
                raise TooManyGlossaries(f"at most {self._max} glossaries per account: delete one first")
            conn.execute("INSERT INTO glossaries VALUES (?, ?, ?, ?)",
                         (gid, tenant, self._seal(gid, name), creation_time))
            for dictionary in dictionaries:
                self._write_entries(conn, gid, dictionary)
            return self._load(conn, tenant, gid)

    def glossaries(self, tenant: str) -> list[Glossary]:
        with self._connection() as conn:
            ids = conn.execute("SELECT id FROM glossaries WHERE tenant = ? ORDER BY creation_time, rowid",
                               (tenant,)).fetchall()
            return [self._load(conn, tenant, gid) for (gid,) in ids]

    def get(self, tenant: str, glossary_id: str) -> Glossary:
        with self._connection() as conn:
            return self._load(conn, tenant, glossary_id)

    def _read_entries(self, conn: sqlite3.Connection, glossary_id: str, pair: tuple[str, str]) -> tuple[Entry, ...]:
        rows = conn.execute(f"SELECT source, target FROM dictionary_entries WHERE {_PAIR} ORDER BY position",
                            (glossary_id, *pair)).fetchall()
        return tuple(Entry(self._unseal(glossary_id, s), self._unseal(glossary_id, t)) for s, t in rows)

    def entries(self, tenant: str, glossary_id: str, source_lang: str, target_lang: str) -> tuple[Entry, ...]:
        with self._connection() as conn:
            if self._load(conn, tenant, glossary_id).dictionary(source_lang, target_lang) is None:
                raise DictionaryNotFound(f"glossary {glossary_id!r} has no {source_lang}→{target_lang} dictionary")
            return self._read_entries(conn, glossary_id, (source_lang, target_lang))

    def rename(self, tenant: str, glossary_id: str, name: str) -> Glossary:
        name = _checked_name(name)
        with self._connection() as conn:
            self._load(conn, tenant, glossary_id)
            conn.execute("UPDATE glossaries SET name = ? WHERE id = ?", (self._seal(glossary_id, name), glossary_id))
            return self._load(conn, tenant, glossary_id)

    def put_dictionary(self, tenant: str, glossary_id: str, dictionary: DictionaryEntries, *,
                       merge: bool = False) -> Dictionary:
        _checked_entries(dictionary.entries)
        pair = (dictionary.source_lang, dictionary.target_lang)
        with self._connection() as conn:
            current = self._load(conn, tenant, glossary_id).dictionary(*pair)
            if merge and current is not None:
                dictionary = DictionaryEntries(*pair, _merged(self._read_entries(conn, glossary_id, pair),
                                                              dictionary.entries))
            return self._write_entries(conn, glossary_id, dictionary)

    def delete_dictionary(self, tenant: str, glossary_id: str, source_lang: str, target_lang: str) -> None:
        with self._connection() as conn:
            self._load(conn, tenant, glossary_id)
            gone = conn.execute(f"DELETE FROM dictionaries WHERE {_PAIR}",
                                (glossary_id, source_lang, target_lang)).rowcount
        if not gone:
            raise DictionaryNotFound(f"glossary {glossary_id!r} has no {source_lang}→{target_lang} dictionary")

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
