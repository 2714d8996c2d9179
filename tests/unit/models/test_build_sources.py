"""The build's training sources: held-out catalogs and the dev set's English never reach the training data."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from peakgate.models import build, corpus
from peakgate.models.train import Recipe

DEV_ENGLISH = "Local domain name not set"


def _write_mo(path: Path, messages: dict[str, str]) -> None:
    """A minimal GNU .mo catalog (header entry, then the messages sorted by msgid), as msgfmt writes it."""
    entries = sorted({"": "Content-Type: text/plain; charset=UTF-8\n", **messages}.items())
    keys, values = [k.encode() for k, _ in entries], [v.encode() for _, v in entries]
    n, table = len(entries), 7 * 4
    data_start = table + 16 * n
    offsets, blob = [], b""
    for s in (*keys, *values):
        offsets.append((len(s), data_start + len(blob)))
        blob += s + b"\0"
    header = struct.pack("<7I", 0x950412DE, 0, n, table, table + 8 * n, 0, data_start)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(header + b"".join(struct.pack("<2I", *o) for o in offsets) + blob)


@pytest.fixture
def paths(tmp_path: Path) -> build.BuildPaths:
    locale = tmp_path / "locale"
    _write_mo(locale / "es/LC_MESSAGES/libc.mo", {DEV_ENGLISH: "No se ha establecido", "Held out": "Reservado"})
    _write_mo(locale / "es/LC_MESSAGES/app.mo", {"Open the file": "Abra el archivo", "Held out": "Fuera"})
    _write_mo(locale / "de/LC_MESSAGES/app.mo", {"Close the window": "Fenster schließen"})
    (tmp_path / "heldout.txt").write_text("# evaluation\nlibc.mo\n")
    (tmp_path / "dev.tsv").write_text(f"libc.mo\t{DEV_ENGLISH}\tNo se ha establecido el nombre\n")
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "x_i18n_Translation-en").write_text(
        "Package: a\nDescription-md5: m1\nDescription-en: Local domain name not set\n"
        " This tool sets the local domain name. It is small.\n\n"
        "Package: b\nDescription-md5: m2\nDescription-en: Simple network tool\n")
    (lists / "x_i18n_Translation-es").write_text(
        "Package: b\nDescription-md5: m2\nDescription-es: Herramienta de red sencilla\n")
    return build.BuildPaths(locale, tmp_path / "heldout.txt", tmp_path / "dev.tsv", tmp_path / "build",
                            tmp_path / "models", lists_dir=lists)


def test_dev_sources_are_the_english_column(tmp_path: Path) -> None:
    (tmp_path / "dev.tsv").write_text("libc.mo\tOne\tUno\nPackageKit.mo\tTwo\tDos\n\n")
    assert corpus.read_dev_sources(tmp_path / "dev.tsv") == {"One", "Two"}


def test_catalog_sources_exclude_heldout_catalogs_and_their_msgids(paths: build.BuildPaths) -> None:
    human, to_distil, sizes = build._sources(paths, Recipe(), lambda _: None)
    assert human == {"Open the file": "Abra el archivo"}
    assert to_distil == ["Close the window"]  # "Held out" is a held-out catalog's msgid, wherever else it is
    assert sizes["heldout_catalogs_excluded"] == 1 and "description_sentences" not in sizes


def test_description_sources_add_pairs_but_never_the_dev_english(paths: build.BuildPaths) -> None:
    human, to_distil, sizes = build._sources(paths, Recipe(descriptions=True), lambda _: None)
    assert human == {"Open the file": "Abra el archivo", "Simple network tool": "Herramienta de red sencilla"}
    assert DEV_ENGLISH not in to_distil and DEV_ENGLISH not in human
    assert "This tool sets the local domain name." in to_distil
    assert sizes["dev_sentences_excluded"] == 1
    assert sizes["description_human_pairs"] == 1 and sizes["description_texts_en"] == 2


def test_the_finetune_domain_is_the_catalogs_without_descriptions(paths: build.BuildPaths) -> None:
    domain = build.in_domain(paths, Recipe(descriptions=True))
    assert domain == {"Open the file", "Close the window"}  # no description sentence, nothing held out


def test_descriptions_without_apt_indexes_fail_with_the_command_to_run(paths: build.BuildPaths) -> None:
    empty = build.BuildPaths(paths.locale_dir, paths.heldout, paths.dev_tsv, paths.build_dir, paths.models_dir,
                             lists_dir=paths.build_dir)
    with pytest.raises(FileNotFoundError, match="Acquire::Languages"):
        build._sources(empty, Recipe(descriptions=True), lambda _: None)


def test_an_unknown_recipe_is_refused_before_anything_is_built(capsys: pytest.CaptureFixture[str]) -> None:
    from peakgate.cli import main

    assert main(["models", "build", "--recipe", "nope"]) == 2
    assert "student-en-es-large" in capsys.readouterr().err
