"""The glossary database's layout, and the step from the single-pair layout of earlier releases.

A glossary holds dictionaries, one per language pair (DeepL's v3 model; a v2 glossary is one with a single
dictionary). Each dictionary has a `revision`, new at every change, so compiled term matchers can be cached
by it. `PRAGMA user_version` records the layout: 1 = single-pair, every name and term sealed; 2 = dictionaries.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

SCHEMA_VERSION = 2
SEALED_SINGLE_PAIR = 1  # the earlier release's last layout: sealing had run

TABLES = """
CREATE TABLE IF NOT EXISTS glossaries (
    id TEXT PRIMARY KEY, tenant TEXT NOT NULL, name BLOB NOT NULL, creation_time TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS glossaries_by_tenant ON glossaries (tenant, creation_time);
CREATE TABLE IF NOT EXISTS dictionaries (
    glossary_id TEXT NOT NULL REFERENCES glossaries (id) ON DELETE CASCADE,
    source_lang TEXT NOT NULL, target_lang TEXT NOT NULL, entry_count INTEGER NOT NULL,
    revision INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (glossary_id, source_lang, target_lang)
);
CREATE TABLE IF NOT EXISTS dictionary_entries (
    glossary_id TEXT NOT NULL, source_lang TEXT NOT NULL, target_lang TEXT NOT NULL,
    position INTEGER NOT NULL, source BLOB NOT NULL, target BLOB NOT NULL,
    PRIMARY KEY (glossary_id, source_lang, target_lang, position),
    FOREIGN KEY (glossary_id, source_lang, target_lang)
        REFERENCES dictionaries (glossary_id, source_lang, target_lang) ON DELETE CASCADE
);
"""

# Single-pair rows become one-dictionary glossaries; sealed bytes move as they are (bound to the glossary id).
_FROM_SINGLE_PAIR = f"""
BEGIN;
ALTER TABLE glossaries RENAME TO single_pair_glossaries;
DROP INDEX IF EXISTS glossaries_by_tenant;
{TABLES}
INSERT INTO glossaries SELECT id, tenant, name, creation_time FROM single_pair_glossaries;
INSERT INTO dictionaries SELECT id, source_lang, target_lang, entry_count, 0 FROM single_pair_glossaries;
INSERT INTO dictionary_entries
    SELECT e.glossary_id, g.source_lang, g.target_lang, e.position, e.source, e.target
    FROM entries e JOIN single_pair_glossaries g ON g.id = e.glossary_id;
DROP TABLE entries;
DROP TABLE single_pair_glossaries;
PRAGMA user_version = {SCHEMA_VERSION};
COMMIT;
"""


def _version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def _has_single_pair_tables(conn: sqlite3.Connection) -> bool:
    return conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'entries'").fetchone() is not None


def migrate(conn: sqlite3.Connection, seal_single_pair: Callable[[sqlite3.Connection], None]) -> None:
    """Bring `conn`'s database to `SCHEMA_VERSION`; `seal_single_pair` seals clear-text rows of the oldest
    layout first. `conn` must be in autocommit mode with foreign keys off (the tables are rebuilt)."""
    if _version(conn) >= SCHEMA_VERSION:
        return
    if not _has_single_pair_tables(conn):
        conn.executescript(f"BEGIN; {TABLES} PRAGMA user_version = {SCHEMA_VERSION}; COMMIT;")
        return
    if _version(conn) < SEALED_SINGLE_PAIR:
        conn.execute("BEGIN")
        seal_single_pair(conn)
        conn.execute("COMMIT")
    conn.executescript(_FROM_SINGLE_PAIR)
