"""The SQLite glossary store: per-tenant ownership, atomic creates, injected wall clock, both store kinds."""

from __future__ import annotations

import sqlite3
import uuid
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from peakgate.atrest import Sealer
from peakgate.errors import BadRequest, ConfigError, NotFound
from peakgate.glossary import (
    Entry,
    GlossaryNotFound,
    GlossaryStore,
    InvalidEntries,
    SqliteGlossaryStore,
    TooManyGlossaries,
    build_glossary_store,
    iso_utc,
)

ENTRIES = (Entry("server", "servidor central"), Entry("account", "cuenta de usuario"))
T0 = datetime(2026, 12, 4, 3, 4, 5, 123456, tzinfo=UTC)


class Wall:
    """A settable wall clock: each call returns the current time, `tick` moves it."""

    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now

    def tick(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


@pytest.fixture
def wall() -> Wall:
    return Wall()


@pytest.fixture(params=["sqlite", "memory"])
def store(request: pytest.FixtureRequest, tmp_path: Path, wall: Wall) -> GlossaryStore:
    built = build_glossary_store(request.param, tmp_path / "db" / "glossaries.sqlite3", wall=wall)
    request.addfinalizer(built.close)
    return built


def test_create_get_list_entries_delete(store: GlossaryStore, wall: Wall) -> None:
    first = store.create("acme", " Ops ", "en", "es", ENTRIES)
    wall.tick(1.5)
    second = store.create("acme", "More", "en", "es", ENTRIES[:1])
    assert str(uuid.UUID(first.glossary_id, version=4)) == first.glossary_id
    assert (first.name, first.source_lang, first.target_lang, first.entry_count, first.ready) == (
        "Ops", "en", "es", 2, True)
    assert first.creation_time == "2026-12-04T03:04:05.123Z"
    assert second.creation_time == "2026-12-04T03:04:06.623Z"
    assert store.get("acme", first.glossary_id) == first
    assert store.glossaries("acme") == [first, second]
    assert store.entries("acme", first.glossary_id) == ENTRIES
    store.delete("acme", first.glossary_id)
    assert store.glossaries("acme") == [second]
    with pytest.raises(GlossaryNotFound):
        store.get("acme", first.glossary_id)


def test_a_tenant_sees_only_its_own_glossaries(store: GlossaryStore) -> None:
    mine = store.create("acme", "Mine", "en", "es", ENTRIES)
    assert store.glossaries("other") == []
    for call in (store.get, store.entries, store.delete):
        with pytest.raises(NotFound, match="not found"):
            call("other", mine.glossary_id)
    assert store.entries("acme", mine.glossary_id) == ENTRIES  # the failed delete did nothing


def test_unknown_id_is_not_found(store: GlossaryStore) -> None:
    with pytest.raises(GlossaryNotFound):
        store.entries("acme", "no-such-id")
    with pytest.raises(GlossaryNotFound):
        store.delete("acme", "no-such-id")


def test_a_failed_create_writes_nothing(store: GlossaryStore) -> None:
    # Duplicates that slipped past parsing are refused before anything is written.
    with pytest.raises(InvalidEntries):
        store.create("acme", "Broken", "en", "es", [Entry("a", "1"), Entry("b", "2"), Entry("a", "3")])
    assert store.glossaries("acme") == []


@pytest.mark.parametrize(("name", "entries"), [("", ENTRIES), ("   ", ENTRIES), ("x" * 1025, ENTRIES), ("ok", ())])
def test_create_refuses_empty_or_oversized_input(store: GlossaryStore, name: str, entries: tuple[Entry, ...]) -> None:
    with pytest.raises(BadRequest):
        store.create("acme", name, "en", "es", entries)
    assert store.glossaries("acme") == []


def test_glossary_count_is_capped_per_tenant(tmp_path: Path) -> None:
    store = SqliteGlossaryStore(str(tmp_path / "g.sqlite3"), max_glossaries=1)
    store.create("acme", "One", "en", "es", ENTRIES)
    with pytest.raises(TooManyGlossaries):
        store.create("acme", "Two", "en", "es", ENTRIES)
    store.create("other", "One", "en", "es", ENTRIES)  # the cap is per tenant
    assert len(store.glossaries("acme")) == 1


def test_sqlite_file_persists_and_cascades_entries(tmp_path: Path, wall: Wall) -> None:
    path = tmp_path / "g.sqlite3"
    sealer = Sealer.ephemeral()  # the reopened store needs the same key
    made = build_glossary_store("sqlite", path, wall=wall, sealer=sealer).create("acme", "Kept", "en", "es", ENTRIES)
    reopened = build_glossary_store("sqlite", path, sealer=sealer)
    assert reopened.entries("acme", made.glossary_id) == ENTRIES
    reopened.delete("acme", made.glossary_id)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM entries").fetchone() == (0,)
    conn.close()


def test_memory_stores_are_separate() -> None:
    a, b = build_glossary_store("memory"), build_glossary_store("memory")
    a.create("acme", "A", "en", "es", ENTRIES)
    assert b.glossaries("acme") == []
    a.close()
    b.close()


def test_sqlite_needs_a_path() -> None:
    with pytest.raises(ConfigError):
        build_glossary_store("sqlite", None)


def test_iso_utc_converts_to_utc_with_milliseconds() -> None:
    plus_two = timezone(timedelta(hours=2))
    assert iso_utc(datetime(2026, 1, 2, 5, 0, 0, 999999, tzinfo=plus_two)) == "2026-01-02T03:00:00.999Z"


def test_names_and_terms_are_sealed_at_rest(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    sealer = Sealer.ephemeral()
    store = build_glossary_store("sqlite", path, sealer=sealer)
    made = store.create("acme", "Contacts of alice@example.com", "en", "es",
                        [Entry("alice@example.com", "+1 415 555 0100")])
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"alice" not in raw and b"415 555" not in raw
    assert store.get("acme", made.glossary_id).name == "Contacts of alice@example.com"
    assert store.entries("acme", made.glossary_id) == (Entry("alice@example.com", "+1 415 555 0100"),)


def test_rows_an_older_release_wrote_in_the_clear_are_sealed_on_open(tmp_path: Path) -> None:
    path = tmp_path / "g.sqlite3"
    with sqlite3.connect(path) as conn:  # the previous schema, as that release wrote it
        conn.executescript("""
            CREATE TABLE glossaries (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, name TEXT NOT NULL,
                source_lang TEXT NOT NULL, target_lang TEXT NOT NULL, creation_time TEXT NOT NULL,
                entry_count INTEGER NOT NULL);
            CREATE TABLE entries (glossary_id TEXT NOT NULL REFERENCES glossaries (id) ON DELETE CASCADE,
                position INTEGER NOT NULL, source TEXT NOT NULL, target TEXT NOT NULL,
                PRIMARY KEY (glossary_id, position), UNIQUE (glossary_id, source));
            INSERT INTO glossaries VALUES ('g1', 'acme', 'Old alice', 'en', 'es', '2026-01-01T00:00:00.000Z', 1);
            INSERT INTO entries VALUES ('g1', 0, 'alice@example.com', 'Alicia');
        """)
    conn.close()
    store = build_glossary_store("sqlite", path)
    assert store.get("acme", "g1").name == "Old alice"
    assert store.entries("acme", "g1") == (Entry("alice@example.com", "Alicia"),)
    store.close()
    assert b"alice" not in path.read_bytes()  # nor in a freed page
