from __future__ import annotations

import io
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from memory_fakes import FakeTranslator, entry

from peakgate.errors import BadRequest, InputTooLarge
from peakgate.memory import AddResult, TmConfig, TranslationMemory, build_memory

FIXED = datetime(2026, 3, 4, 5, 6, 7, tzinfo=UTC)


@pytest.fixture
def tm(tmp_path: Path) -> Iterator[TranslationMemory]:
    memory = build_memory(TmConfig(max_entry_chars=100), tmp_path / "tm.sqlite3", wall_clock=lambda: FIXED)
    yield memory
    memory.close()


def test_add_stamps_with_the_injected_wall_clock_and_normalizes_langs(tm: TranslationMemory) -> None:
    assert tm.add("acme", "EN-us", "es", "Open", "Abrir", model="student") == AddResult(inserted=1)
    match = tm.lookup("acme", "en", "es", "Open")
    assert match is not None and match.kind == "exact" and match.score == 1.0
    assert match.entry.created_at == FIXED.isoformat() and match.entry.model == "student"
    assert match.entry.origin == "model" and match.entry.source_lang == "en"


def test_tenant_sees_own_entries_first_then_shared(tm: TranslationMemory) -> None:
    tm.add_many([entry("Open", "Abrir (shared)"), entry("Open", "Abrir (acme)", tenant="acme"),
                 entry("Close the window", "Cerrar la ventana")])
    assert tm.lookup("acme", "en", "es", "Open").entry.target == "Abrir (acme)"  # type: ignore[union-attr]
    assert tm.lookup("other", "en", "es", "Open").entry.target == "Abrir (shared)"  # type: ignore[union-attr]
    fuzzy = tm.lookup("acme", "en", "es", "Close the windows")
    assert fuzzy is not None and fuzzy.kind == "fuzzy" and fuzzy.entry.tenant == ""
    tm.add_many([entry("Open", "Abrir (globex)", tenant="globex")])
    assert tm.lookup("acme", "en", "es", "Open").entry.target == "Abrir (acme)"  # type: ignore[union-attr]


def test_serves_says_whether_the_tenant_or_shared_scope_holds_anything(tm: TranslationMemory) -> None:
    assert not tm.serves("acme", "en", "es")
    tm.add_many([entry("Open", "Abrir", tenant="acme")])
    assert tm.serves("acme", "EN-us", "es") and not tm.serves("globex", "en", "es")
    tm.add_many([entry("Close", "Cerrar")])  # shared: every tenant's lookups can match now
    assert tm.serves("globex", "en", "es") and not tm.serves("globex", "en", "fr")


def test_exact_beats_fuzzy_and_misses_are_none(tm: TranslationMemory) -> None:
    tm.add_many([entry("Save the file", "Guardar el fichero"), entry("Save the files", "Guardar los ficheros")])
    assert tm.lookup("", "en", "es", "Save the files").kind == "exact"  # type: ignore[union-attr]
    assert tm.lookup("", "en", "es", "Something else entirely") is None
    assert tm.lookup("", "en", "es", "   ") is None
    assert tm.lookup("", "en", "fr", "Save the file") is None
    assert tm.lookup("", "en", "es", "Save the file " * 20) is None  # over max_entry_chars: not even looked up


def test_disabled_memory_finds_nothing(tmp_path: Path) -> None:
    memory = build_memory(TmConfig(enabled=False), tmp_path / "tm.sqlite3")
    memory.add("", "en", "es", "Open", "Abrir")
    assert memory.lookup("", "en", "es", "Open") is None
    memory.close()


def test_bad_entries_are_skipped_by_add_and_rejected_by_corrections(tm: TranslationMemory) -> None:
    assert tm.add("", "en", "es", "x" * 101, "y") == AddResult(skipped=1)
    assert tm.add("", "en", "es", "  ", "y") == AddResult(skipped=1)
    assert tm.add("", "english", "es", "Hi", "Hola") == AddResult(skipped=1)
    with pytest.raises(InputTooLarge):
        tm.add_correction("", "en", "es", "Hi", "y" * 101)
    with pytest.raises(BadRequest):
        tm.add_correction("", "en", "es", "Hi", "")
    assert tm.count() == 0


def test_correction_beats_model_and_survives_model_rewrites(tm: TranslationMemory) -> None:
    tm.add("", "en", "es", "Open", "Abierto")
    assert tm.add_correction("", "en", "es", "Open", "Abrir") == AddResult(updated=1)
    assert tm.add("", "en", "es", "Open", "Abierto") == AddResult(kept=1)
    assert tm.lookup("", "en", "es", "Open").entry.origin == "correction"  # type: ignore[union-attr]


async def test_lookup_or_repair_kinds(tm: TranslationMemory) -> None:
    tm.add_many([entry("Could not read the config file", "No se pudo leer el fichero de configuración")])
    fake = FakeTranslator({"config": "configuración", "log": "registro"})
    exact = await tm.lookup_or_repair("", "en", "es", "Could not read the config file", fake)
    assert exact is not None and exact.kind == "exact" and exact.text == exact.entry.target
    fixed = await tm.lookup_or_repair("", "en", "es", "Could not read the log file", fake)
    assert fixed is not None and fixed.kind == "repaired"
    assert fixed.text == "No se pudo leer el fichero de registro" and 0.75 <= fixed.score < 1
    no_engine = await tm.lookup_or_repair("", "en", "es", "Could not read the log file")
    assert no_engine is not None and no_engine.kind == "fuzzy" and no_engine.text is None
    unfixable = await tm.lookup_or_repair("", "en", "es", "Could not read the log files", fake)
    assert unfixable is not None and unfixable.kind == "fuzzy" and unfixable.text is None
    assert await tm.lookup_or_repair("", "en", "es", "Nothing like it at all", fake) is None


async def test_repair_off_in_config_never_calls_the_engine(tmp_path: Path) -> None:
    memory = build_memory(TmConfig(repair=False), tmp_path / "tm.sqlite3")
    memory.add_many([entry("Could not read the config file", "No se pudo leer el fichero de configuración")])
    fake = FakeTranslator({})
    got = await memory.lookup_or_repair("", "en", "es", "Could not read the log file", fake)
    assert got is not None and got.kind == "fuzzy" and fake.calls == []
    memory.close()


def test_export_to_a_stream_filters(tm: TranslationMemory) -> None:
    tm.add_many([entry("Open", "Abrir"), entry("Open", "Ouvrir", tl="fr"), entry("Hi", "Hola", tenant="acme")])
    out = io.StringIO()
    assert tm.export_tmx(out, target_lang="es") == 2
    assert 'srclang="*all*"' in out.getvalue() and "Ouvrir" not in out.getvalue()
    assert tm.delete("acme", "en", "es", "Hi") and tm.count() == 2
