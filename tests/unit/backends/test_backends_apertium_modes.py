"""Apertium mode names -> served pairs: 3- and 2-letter codes, DeepL regional variants, what is left out."""

from __future__ import annotations

from pathlib import Path

import pytest

from peakgate.backends.apertium_modes import ModePair, discover_modes, parse_mode


@pytest.mark.parametrize(("mode", "pair"), [
    ("eng-spa", ("en", "es")),
    ("spa-cat", ("es", "ca")),
    ("ita-spa", ("it", "es")),
    ("glg-por", ("gl", "pt")),
    ("fra-cat", ("fr", "ca")),
    ("fr-es", ("fr", "es")),
    ("en-gl", ("en", "gl")),
    ("ast-spa", ("ast", "es")),  # no 2-letter code: the 3-letter one stays
    ("spa-eng_US", ("es", "en-us")),
    ("cat-eng_US", ("ca", "en-us")),
    ("es-pt_BR", ("es", "pt-br")),
])
def test_mode_names_become_pairs_in_client_codes(mode: str, pair: tuple[str, str]) -> None:
    assert parse_mode(mode) == ModePair(mode, *pair)


@pytest.mark.parametrize("mode", [
    "eco-es-fr",  # a domain mode: three parts
    "spa-cat_valencia", "eng-cat_valencia_uni_iec2017", "spa-cat_iec2017",  # variants no client code names
    "spa-cat_US",  # a region of another language
    "eng-eng", "e-spa", "eng-sp4", "eng",
])
def test_modes_no_client_can_name_are_left_out(mode: str) -> None:
    assert parse_mode(mode) is None


def test_discovery_reads_the_mode_files_in_name_order(tmp_path: Path) -> None:
    for name in ("spa-eng.mode", "eng-spa.mode", "eco-es-fr.mode", "README", "es-pt_BR.mode"):
        (tmp_path / name).write_text("lt-proc x\n")
    assert discover_modes(tmp_path) == (ModePair("eng-spa", "en", "es"), ModePair("es-pt_BR", "es", "pt-br"),
                                        ModePair("spa-eng", "es", "en"))
    assert discover_modes(tmp_path / "absent") == ()
