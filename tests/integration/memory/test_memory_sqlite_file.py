"""The translation memory against a real SQLite file: persistence, dev-set fuzzy matches, TMX in and out."""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

import pytest

from bench._common import default_dev_path
from peakgate.clock import FakeClock
from peakgate.memory import ImportProgress, TmConfig, TmEntry, TmxError, TranslationMemory, build_memory

DEV = default_dev_path()
needs_dev = pytest.mark.skipif(not DEV.is_file(), reason=f"dev set {DEV} is missing")
NOW = datetime(2026, 5, 6, 7, 8, 9, tzinfo=UTC)


def dev_pairs() -> list[tuple[str, str]]:
    rows = (line.split("\t") for line in DEV.read_text(encoding="utf-8").splitlines())
    return [(f[1], f[2]) for f in rows if len(f) == 3 and f[1] and f[2]]


def open_tm(data_dir: Path, **overrides: object) -> TranslationMemory:
    overrides.setdefault("scope_recheck_s", 0.0)  # these tests want another connection's commits seen at once
    return build_memory(TmConfig.model_validate(overrides), data_dir / "tm.sqlite3", wall_clock=lambda: NOW)


def tmx_file(path: Path, tus: list[str], srclang: str = "en") -> Path:
    path.write_text('<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="1.4">\n'
                    f'<header creationtool="t" srclang="{srclang}" segtype="sentence" adminlang="en"'
                    ' datatype="plaintext" o-tmf="t"/>\n<body>\n' + "\n".join(tus) + "\n</body>\n</tmx>\n",
                    encoding="utf-8")
    return path


def tu(src: str, tgt: str, sl: str = "en", tl: str = "es") -> str:
    return f'<tu><tuv xml:lang="{sl}"><seg>{src}</seg></tuv><tuv xml:lang="{tl}"><seg>{tgt}</seg></tuv></tu>'


@needs_dev
def test_persist_reopen_and_lookups_still_work(tmp_path: Path) -> None:
    pairs = dev_pairs()
    tm = open_tm(tmp_path)
    added = tm.add_many(TmEntry("en", "es", en, es, origin="human", created_at="") for en, es in pairs)
    assert added.inserted == len({" ".join(en.split()) for en, _ in pairs})
    tm.close()
    assert (tmp_path / "tm.sqlite3").is_file()
    with sqlite3.connect(tmp_path / "tm.sqlite3") as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"

    tm = open_tm(tmp_path)  # the fuzzy index is rebuilt from the file
    en = next(en for en, _ in pairs if len(en.split()) >= 8)
    exact = tm.lookup("acme", "en", "es", en)  # acme falls back to the shared entries
    assert exact is not None and exact.kind == "exact" and exact.entry.created_at == NOW.isoformat()
    words = en.split()
    words[3] = "zebra"
    fuzzy = tm.lookup("acme", "en", "es", " ".join(words))
    assert fuzzy is not None and fuzzy.kind == "fuzzy" and fuzzy.entry.source == en and fuzzy.score >= 0.75
    tm.close()


def test_corrupt_tmx_commits_nothing(tmp_path: Path) -> None:
    tm = open_tm(tmp_path)
    good = tmx_file(tmp_path / "good.tmx", [tu("Open", "Abrir")])
    tm.import_tmx(good)
    lines = [tu(f"Message {i}", f"Mensaje {i}") for i in range(2_000)]
    bad = tmx_file(tmp_path / "bad.tmx", lines)
    bad.write_bytes(bad.read_bytes()[:-4_000])  # truncated mid-file
    with pytest.raises(TmxError, match=r"bad\.tmx:\d+:\d+"):
        tm.import_tmx(bad)
    assert tm.count() == 1
    assert tm.lookup("", "en", "es", "Message 7") is None  # nor did the fuzzy index see them
    tm.close()
    assert open_tm(tmp_path).count() == 1


def test_not_a_tmx_file(tmp_path: Path) -> None:
    (tmp_path / "x.tmx").write_text("<html><body/></html>")
    with pytest.raises(TmxError, match="not a TMX file"):
        open_tm(tmp_path).import_tmx(tmp_path / "x.tmx")
    with pytest.raises(TmxError, match="cannot read"):
        open_tm(tmp_path).import_tmx(tmp_path / "missing.tmx")


def test_enormous_and_invalid_entries_are_skipped_not_fatal(tmp_path: Path) -> None:
    tm = open_tm(tmp_path, max_entry_chars=1_000)
    path = tmx_file(tmp_path / "mixed.tmx", [
        tu("Fine", "Bien"), tu("x " * 50_000, "y"), tu("Hello", "Hola", tl="spanish!"), tu("Bye", "Adiós", "en-US"),
        tu("Yes", "Sí", tl="es-419"),
    ])
    seen: list[ImportProgress] = []
    report = tm.import_tmx(path, tenant="acme", progress=seen.append)
    assert report.tus == 5 and report.added.inserted == 3  # "en-US" tuv accepted for header "en"
    assert report.skipped == {"too_long": 1, "invalid_lang": 1}
    assert seen and seen[-1].tus == 5 and seen[-1].bytes_read == seen[-1].total_bytes > 100_000
    assert tm.lookup("acme", "en", "es", "Yes").entry.target == "Sí"  # type: ignore[union-attr]
    assert tm.lookup("", "en", "es", "Yes") is None  # imported for acme only


@needs_dev
def test_export_import_roundtrip(tmp_path: Path) -> None:
    pairs = dev_pairs()[:200]
    src = open_tm(tmp_path / "a")
    src.add_many(TmEntry("en", "es", en, es, origin="human", created_at="") for en, es in pairs)
    src.add("", "en", "es", "A & B <tag> \"q\"", "A y B <etiqueta> «q»", model="student-int8")
    out = tmp_path / "export.tmx"
    written = src.export_tmx(out, source_lang="en", target_lang="es")
    assert written == src.count() and not (tmp_path / "export.tmx.part").exists()

    dst = open_tm(tmp_path / "b")
    report = dst.import_tmx(out)
    assert report.skipped == {} and report.added.inserted == written
    before = sorted((e.source, e.target, e.origin, e.model, e.created_at) for e in src.entries())
    after = sorted((e.source, e.target, e.origin, e.model, e.created_at) for e in dst.entries())
    assert after == before


def test_refresh_sees_what_another_process_imported(tmp_path: Path) -> None:
    server = open_tm(tmp_path)
    server.add("", "en", "es", "Keep the old entry here", "Mantén la entrada vieja aquí")
    cli = open_tm(tmp_path)  # a second connection, as `peakgate tm import` would open
    cli.import_tmx(tmx_file(tmp_path / "new.tmx", [tu("The printer needs more paper", "La impresora necesita papel")]))
    assert cli.delete("", "en", "es", "Keep the old entry here")
    assert server.lookup("", "en", "es", "The printer needs more paper").kind == "exact"  # type: ignore[union-attr]
    assert server.lookup("", "en", "es", "The printer needs some paper") is None  # not indexed here yet
    assert server.lookup("", "en", "es", "Keep the old entry there") is None  # deleted row: hit dropped
    assert server.refresh() == 1 and server.refresh() == 0
    match = server.lookup("", "en", "es", "The printer needs some paper")
    assert match is not None and match.kind == "fuzzy"
    cli.close()
    server.close()


def test_exact_lookups_see_a_scope_another_process_created(tmp_path: Path) -> None:
    server = open_tm(tmp_path)
    assert server.exact("acme", "en", "fr", "Save the file") is None  # no such scope yet: skipped cheaply
    cli = open_tm(tmp_path)
    cli.add("acme", "en", "fr", "Save the file", "Enregistrer le fichier", origin="human")
    found = server.exact("acme", "en", "fr", "Save the file")
    assert found is not None and found.entry.target == "Enregistrer le fichier"
    cli.close()
    server.close()



def test_new_scopes_are_rechecked_at_most_every_scope_recheck_s(tmp_path: Path) -> None:
    clock = FakeClock()
    server = build_memory(TmConfig(scope_recheck_s=0.05), tmp_path / "tm.sqlite3", wall_clock=lambda: NOW,
                          clock=clock)
    statements: list[str] = []
    server._store._db.set_trace_callback(statements.append)  # type: ignore[attr-defined]
    for _ in range(10):  # 20 store lookups (own scope, then shared) inside one recheck window
        assert server.exact("acme", "en", "fr", "Save the file") is None
    assert sum("data_version" in s for s in statements) == 1
    cli = open_tm(tmp_path)
    cli.add("acme", "en", "fr", "Save the file", "Enregistrer le fichier", origin="human")
    assert server.exact("acme", "en", "fr", "Save the file") is None  # not looked for yet: within the window
    clock.advance(0.05)
    found = server.exact("acme", "en", "fr", "Save the file")
    assert found is not None and found.entry.target == "Enregistrer le fichier"
    server.add("beta", "en", "fr", "Open", "Ouvrir")  # our own commit is seen at once, window or not
    assert server.exact("beta", "en", "fr", "Open") is not None
    cli.close()
    server.close()
