from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from memory_fakes import entry

from peakgate.memory.entry import AddResult, TmEntry
from peakgate.memory.sqlite_store import SqliteTmStore
from peakgate.memory.store import Scope, TmStoreError

EN_ES = Scope("", "en", "es")


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteTmStore]:
    s = SqliteTmStore(tmp_path / "tm.sqlite3")
    yield s
    s.close()


def test_add_many_counts_inserts_and_updates(store: SqliteTmStore) -> None:
    assert store.add_many([entry("Open", "Abrir"), entry("Close", "Cerrar")]) == AddResult(inserted=2)
    assert store.add_many([entry("Open", "Abre"), entry("Quit", "Salir")]) == AddResult(inserted=1, updated=1)
    assert store.count() == 3
    got = store.exact(EN_ES, "Open")
    assert got is not None and got.target == "Abre"


def test_exact_lookup_is_by_normalized_source(store: SqliteTmStore) -> None:
    store.add_many([entry("Save  the\tfile", "Guardar el fichero")])
    hit = store.exact(EN_ES, " Save the file ")
    assert hit is not None and hit.source == "Save  the\tfile"  # stored as given, keyed normalized
    assert store.exact(EN_ES, "save the file") is None  # case is significant for exact matches


def test_model_never_overwrites_human_sourced(store: SqliteTmStore) -> None:
    store.add_many([entry("Open", "Abrir", origin="human"), entry("Close", "Cerrar", origin="correction"),
                    entry("Quit", "Salir", origin="import"), entry("Copy", "Copiar", origin="model")])
    result = store.add_many([entry(s, "MT", origin="model", model="m1") for s in ("Open", "Close", "Quit", "Copy")])
    assert result == AddResult(updated=1, kept=3)
    assert [store.exact(EN_ES, s).target for s in ("Open", "Close", "Quit", "Copy")] == [  # type: ignore[union-attr]
        "Abrir", "Cerrar", "Salir", "MT"]
    assert store.add_many([entry("Open", "Abrir archivo", origin="correction")]) == AddResult(updated=1)


def test_a_failing_batch_writes_nothing_and_leaves_the_index_alone(store: SqliteTmStore) -> None:
    store.add_many([entry("Keep me", "Guárdame")])

    def broken() -> Iterator[TmEntry]:
        yield entry("The printer is on fire", "La impresora está ardiendo")
        raise RuntimeError("upstream parse failed")

    with pytest.raises(RuntimeError):
        store.add_many(broken())
    assert store.count() == 1
    assert store.fuzzy(EN_ES, "The printer is on fire", threshold=0.5) == []
    assert store.add_many([entry("Next", "Siguiente")]) == AddResult(inserted=1)  # the connection still works


def test_fuzzy_returns_full_entries(store: SqliteTmStore) -> None:
    store.add_many([entry("The file could not be opened", "No se pudo abrir el fichero", model=None)])
    (match,) = store.fuzzy(EN_ES, "The file could not be read", threshold=0.7)
    assert match.kind == "fuzzy" and match.entry.target == "No se pudo abrir el fichero"
    assert match.entry.created_at and match.entry.origin == "human"


def test_delete_removes_row_and_fuzzy_entry(store: SqliteTmStore) -> None:
    store.add_many([entry("Remove this entry now", "Borra esta entrada ya")])
    assert store.delete(EN_ES, " Remove this  entry now")
    assert not store.delete(EN_ES, "Remove this entry now")
    assert store.exact(EN_ES, "Remove this entry now") is None
    assert store.fuzzy(EN_ES, "Remove this entry now", threshold=0.5) == []


def test_iter_entries_pages_and_filters(store: SqliteTmStore) -> None:
    store.add_many([entry(f"Message {i}", f"Mensaje {i}") for i in range(1_203)])
    store.add_many([entry("Hello", "Bonjour", tl="fr"), entry("Hi", "Hola", tenant="acme")])
    assert sum(1 for _ in store.iter_entries()) == 1_205
    assert [e.target for e in store.iter_entries(target_lang="fr")] == ["Bonjour"]
    assert [e.source for e in store.iter_entries(tenant="acme")] == ["Hi"]
    assert store.count(tenant="", target_lang="es") == 1_203


def test_unopenable_path_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(TmStoreError, match="cannot open"):
        SqliteTmStore(blocker / "tm.sqlite3")


def test_has_entries_sees_a_scope_as_soon_as_it_is_written(store: SqliteTmStore) -> None:
    scope = Scope("acme", "en", "es")
    assert not store.has_entries(scope)
    store.add_many([TmEntry("en", "es", "Hello", "Hola", "acme", "model")])
    assert store.has_entries(scope) and not store.has_entries(Scope("other", "en", "es"))
