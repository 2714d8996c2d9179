"""Debian package descriptions: deb822 parsing, sentence splitting, and paragraph/sentence alignment."""

from __future__ import annotations

from pathlib import Path

from peakgate.models import descriptions as d

ENGLISH = """\
Package: 0ad
Description-md5: aaa
Description-en: Real-time strategy game of ancient warfare
 0 A.D. is a free, open-source game of ancient warfare. It runs on many
 platforms, e.g. Linux and BSD.
 .
 Features include:
  * multiplayer games over the network
  * a scenario editor
 .
 See https://play0ad.com/ for more.

Package: 0ad-data
Description-md5: bbb
Description-en: Data files for the strategy game
 This package contains the data files. It is large.

Package: tool
Description-md5: ccc
Description-en: Command line tool
 Run it as tool --help to list the options. It prints a short summary.
"""

SPANISH = """\
Package: 0ad
Description-md5: aaa
Description-es: Juego de estrategia en tiempo real de guerra antigua
 0 A.D. es un juego libre y de código abierto de guerra antigua. Funciona en
 muchas plataformas, p.ej. Linux y BSD.
 .
 Entre sus características:
  * partidas multijugador por la red
  * un editor de escenarios
 .
 Vea https://play0ad.com/ para más.

Package: 0ad-data
Description-md5: bbb
Description-es: Archivos de datos del juego de estrategia
 Este paquete contiene los archivos de datos, que son grandes.

Package: tool
Description-md5: ccc
Description-es: Herramienta de línea de órdenes
 Ejecútela como tool --help para listar las opciones. Muestra un resumen breve y muy, muy, muy, muy, muy largo.
"""


def test_stanzas_keep_continuation_lines_as_written() -> None:
    first = next(d.stanzas(ENGLISH))
    assert first["Package"] == "0ad" and first["Description-md5"] == "aaa"
    assert first["Description-en"].split("\n")[3] == " ."
    assert "  * a scenario editor" in first["Description-en"].split("\n")


def test_descriptions_are_keyed_by_md5() -> None:
    english = d.descriptions([ENGLISH], "en")
    assert sorted(english) == ["aaa", "bbb", "ccc"]
    assert english["bbb"].startswith("Data files for the strategy game\n This package")
    assert d.descriptions([ENGLISH], "es") == {}


def test_sentences_split_at_sentence_ends_but_not_abbreviations() -> None:
    assert d.split_sentences("0 A.D. is a game. It runs on many platforms, e.g. Linux and BSD.") == [
        "0 A.D. is a game.", "It runs on many platforms, e.g. Linux and BSD."]
    assert d.split_sentences("Version 2.0 is out. ¿Qué tal? Bien.") == ["Version 2.0 is out.", "¿Qué tal?", "Bien."]
    assert d.split_sentences("It uses libfoo. libfoo is small.") == ["It uses libfoo. libfoo is small."]


def test_paragraphs_drop_lists_and_keep_the_paragraph_count() -> None:
    paras = d.paragraphs(d.descriptions([ENGLISH], "en")["aaa"])
    assert paras == [
        ["Real-time strategy game of ancient warfare"],
        ["0 A.D. is a free, open-source game of ancient warfare.", "It runs on many platforms, e.g. Linux and BSD."],
        ["Features include:"],
        ["See https://play0ad.com/ for more."],
    ]
    assert d.paragraphs("Short only") == [["Short only"]]


def test_usable_rejects_urls_code_and_overlong_text() -> None:
    assert d.usable("It runs on many platforms.")
    assert not d.usable("See https://play0ad.com/ for more.")
    assert not d.usable("Run it as tool --help to list the options.")
    assert not d.usable("Calls foo::bar() at start.")
    assert not d.usable("word")
    assert not d.usable("a " * 150)


def test_english_sentences_are_distinct_and_usable() -> None:
    sentences = d.english_sentences(d.descriptions([ENGLISH], "en"))
    assert "Real-time strategy game of ancient warfare" in sentences and "It is large." in sentences
    assert not any("http" in s or "--help" in s for s in sentences)
    assert sentences == sorted(set(sentences))


def test_alignment_keeps_only_paragraphs_whose_sentence_counts_match() -> None:
    pairs = d.aligned_pairs(d.descriptions([ENGLISH], "en"), d.descriptions([SPANISH], "es"))
    assert pairs["Real-time strategy game of ancient warfare"] == "Juego de estrategia en tiempo real de guerra antigua"
    assert pairs["It runs on many platforms, e.g. Linux and BSD."] == (
        "Funciona en muchas plataformas, p.ej. Linux y BSD.")
    assert pairs["Features include:"] == "Entre sus características:"
    # bbb's long paragraph: two English sentences, one Spanish: nothing from it.
    assert "This package contains the data files." not in pairs and "It is large." not in pairs
    # ccc: counts match, but one side is not prose and the other pair's lengths are implausible.
    assert "It prints a short summary." not in pairs
    assert not any("http" in s for s in pairs)


def test_indexes_are_found_and_read(tmp_path: Path) -> None:
    index = tmp_path / "deb.debian.org_debian_dists_bookworm_main_i18n_Translation-en"
    index.write_text(ENGLISH, encoding="utf-8")
    (tmp_path / "deb.debian.org_debian_dists_bookworm_main_i18n_Translation-es").write_text(SPANISH)
    assert d.find_indexes(tmp_path, "en") == [index]
    assert d.read_index(index) == ENGLISH
