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
    Dictionary,
    DictionaryEntries,
    DictionaryNotFound,
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


def _en_es(entries: tuple[Entry, ...] | list[Entry]) -> list[DictionaryEntries]:
    return [DictionaryEntries("en", "es", entries)]


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
    first = store.create("acme", " Ops ", _en_es(ENTRIES))
    wall.tick(1.5)
    second = store.create("acme", "More", _en_es(ENTRIES[:1]))
    assert str(uuid.UUID(first.glossary_id, version=4)) == first.glossary_id
    assert (first.name, first.ready, first.single) == ("Ops", True, first.dictionaries[0])
    assert (first.dictionaries[0].source_lang, first.dictionaries[0].target_lang,
            first.dictionaries[0].entry_count) == ("en", "es", 2)
    assert first.creation_time == "2026-12-04T03:04:05.123Z"
    assert second.creation_time == "2026-12-04T03:04:06.623Z"
    assert store.get("acme", first.glossary_id) == first
    assert store.glossaries("acme") == [first, second]
    assert store.entries("acme", first.glossary_id, "en", "es") == ENTRIES
    store.delete("acme", first.glossary_id)
    assert store.glossaries("acme") == [second]
    with pytest.raises(GlossaryNotFound):
        store.get("acme", first.glossary_id)


def test_a_tenant_sees_only_its_own_glossaries(store: GlossaryStore) -> None:
    mine = store.create("acme", "Mine", _en_es(ENTRIES))
    assert store.glossaries("other") == []
    for call in (store.get, store.delete, lambda t, g: store.entries(t, g, "en", "es"),
                 lambda t, g: store.rename(t, g, "Theirs"), lambda t, g: store.delete_dictionary(t, g, "en", "es")):
        with pytest.raises(NotFound, match="not found"):
            call("other", mine.glossary_id)
    assert store.entries("acme", mine.glossary_id, "en", "es") == ENTRIES  # the failed delete did nothing


def test_unknown_id_is_not_found(store: GlossaryStore) -> None:
    with pytest.raises(GlossaryNotFound):
        store.entries("acme", "no-such-id", "en", "es")
    with pytest.raises(GlossaryNotFound):
        store.delete("acme", "no-such-id")


def test_a_failed_create_writes_nothing(store: GlossaryStore) -> None:
    # Duplicates that slipped past parsing are refused before anything is written.
    with pytest.raises(InvalidEntries):
        store.create("acme", "Broken", _en_es([Entry("a", "1"), Entry("b", "2"), Entry("a", "3")]))
    assert store.glossaries("acme") == []


@pytest.mark.parametrize(("name", "entries"), [("", ENTRIES), ("   ", ENTRIES), ("x" * 1025, ENTRIES), ("ok", ())])
def test_create_refuses_empty_or_oversized_input(store: GlossaryStore, name: str, entries: tuple[Entry, ...]) -> None:
    with pytest.raises(BadRequest):
        store.create("acme", name, _en_es(entries))
    assert store.glossaries("acme") == []


def test_glossary_count_is_capped_per_tenant(tmp_path: Path) -> None:
    store = SqliteGlossaryStore(str(tmp_path / "g.sqlite3"), max_glossaries=1)
    store.create("acme", "One", _en_es(ENTRIES))
    with pytest.raises(TooManyGlossaries):
        store.create("acme", "Two", _en_es(ENTRIES))
    store.create("other", "One", _en_es(ENTRIES))  # the cap is per tenant
    assert len(store.glossaries("acme")) == 1


def test_sqlite_file_persists_and_cascades_entries(tmp_path: Path, wall: Wall) -> None:
    path = tmp_path / "g.sqlite3"
    sealer = Sealer.ephemeral()  # the reopened store needs the same key
    made = build_glossary_store("sqlite", path, wall=wall, sealer=sealer).create("acme", "Kept", _en_es(ENTRIES))
    reopened = build_glossary_store("sqlite", path, sealer=sealer)
    assert reopened.entries("acme", made.glossary_id, "en", "es") == ENTRIES
    reopened.delete("acme", made.glossary_id)
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT count(*) FROM dictionary_entries").fetchone() == (0,)
    conn.close()


def test_memory_stores_are_separate() -> None:
    a, b = build_glossary_store("memory"), build_glossary_store("memory")
    a.create("acme", "A", _en_es(ENTRIES))
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
    made = store.create("acme", "Contacts of alice@example.com",
                        _en_es([Entry("alice@example.com", "+1 415 555 0100")]))
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir())
    assert b"alice" not in raw and b"415 555" not in raw
    assert store.get("acme", made.glossary_id).name == "Contacts of alice@example.com"
    assert store.entries("acme", made.glossary_id, "en", "es") == (Entry("alice@example.com", "+1 415 555 0100"),)


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
    assert store.entries("acme", "g1", "en", "es") == (Entry("alice@example.com", "Alicia"),)
    assert store.get("acme", "g1").dictionaries == (Dictionary("en", "es", 1, 0),)  # migrated to one dictionary
    store.close()
    assert b"alice" not in path.read_bytes()  # nor in a freed page


def test_dictionaries_per_pair_put_merge_and_delete(store: GlossaryStore) -> None:
    made = store.create("acme", "Multi", [DictionaryEntries("en", "es", ENTRIES),
                                         DictionaryEntries("en", "fr", [Entry("server", "serveur")])])
    assert [(d.source_lang, d.target_lang, d.entry_count) for d in made.dictionaries] == [
        ("en", "es", 2), ("en", "fr", 1)]
    assert made.single is None
    before = made.dictionary("en", "es")
    assert before is not None
    merged = store.put_dictionary("acme", made.glossary_id, DictionaryEntries(
        "en", "es", [Entry("account", "cuenta"), Entry("file", "archivo")]), merge=True)
    assert store.entries("acme", made.glossary_id, "en", "es") == (
        Entry("server", "servidor central"), Entry("account", "cuenta"), Entry("file", "archivo"))
    assert merged.entry_count == 3 and merged.revision != before.revision  # a new revision: caches recompile
    store.put_dictionary("acme", made.glossary_id, DictionaryEntries("en", "fr", [Entry("file", "fichier")]))
    assert store.entries("acme", made.glossary_id, "en", "fr") == (Entry("file", "fichier"),)  # replaced
    store.delete_dictionary("acme", made.glossary_id, "en", "fr")
    with pytest.raises(DictionaryNotFound):
        store.entries("acme", made.glossary_id, "en", "fr")
    with pytest.raises(DictionaryNotFound):
        store.delete_dictionary("acme", made.glossary_id, "en", "fr")
    assert store.rename("acme", made.glossary_id, " Renamed ").name == "Renamed"
    assert [d.target_lang for d in store.get("acme", made.glossary_id).dictionaries] == ["es"]


def test_create_refuses_no_dictionary_or_a_repeated_pair(store: GlossaryStore) -> None:
    with pytest.raises(BadRequest, match="at least one dictionary"):
        store.create("acme", "None", [])
    with pytest.raises(BadRequest, match="one dictionary per language pair"):
        store.create("acme", "Twice", [*_en_es(ENTRIES), *_en_es(ENTRIES)])
    assert store.glossaries("acme") == []


def test_a_sealed_single_pair_database_keeps_its_glossaries_as_one_dictionary_each(tmp_path: Path) -> None:
    path, sealer = tmp_path / "g.sqlite3", Sealer.ephemeral()
    with sqlite3.connect(path) as conn:  # the previous release's last layout: sealed, user_version 1
        conn.executescript("""
            CREATE TABLE glossaries (id TEXT PRIMARY KEY, tenant TEXT NOT NULL, name TEXT NOT NULL,
                source_lang TEXT NOT NULL, target_lang TEXT NOT NULL, creation_time TEXT NOT NULL,
                entry_count INTEGER NOT NULL);
            CREATE INDEX glossaries_by_tenant ON glossaries (tenant, creation_time);
            CREATE TABLE entries (glossary_id TEXT NOT NULL REFERENCES glossaries (id) ON DELETE CASCADE,
                position INTEGER NOT NULL, source BLOB NOT NULL, target BLOB NOT NULL,
                PRIMARY KEY (glossary_id, position));
            PRAGMA user_version = 1;
        """)
        conn.execute("INSERT INTO glossaries VALUES ('g1', 'acme', ?, 'en', 'es', '2026-01-01T00:00:00.000Z', 2)",
                     (sealer.seal_text("Ops", b"g1"),))
        conn.executemany("INSERT INTO entries VALUES ('g1', ?, ?, ?)",
                         [(i, sealer.seal_text(e.source, b"g1"), sealer.seal_text(e.target, b"g1"))
                          for i, e in enumerate(ENTRIES)])
    conn.close()
    store = build_glossary_store("sqlite", path, sealer=sealer)
    assert store.get("acme", "g1").name == "Ops"
    assert store.entries("acme", "g1", "en", "es") == ENTRIES
    store.create("acme", "New", _en_es(ENTRIES))  # the new layout takes writes
    reopened = build_glossary_store("sqlite", path, sealer=sealer)  # and opening again changes nothing
    assert [g.name for g in reopened.glossaries("acme")] == ["Ops", "New"]
    with sqlite3.connect(path) as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    conn.close()
    assert tables == {"glossaries", "dictionaries", "dictionary_entries"}
