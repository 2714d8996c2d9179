"""Language detection: accuracy on the en-es dev file, plus cues for the other languages."""

from __future__ import annotations

import pytest

from bench._common import default_dev_path
from peakgate.routing.langdetect import LANGUAGES, detect

DEV_FILE = default_dev_path()


def _dev_rows() -> list[tuple[str, str]]:
    if not DEV_FILE.exists():
        pytest.skip(f"{DEV_FILE} not present")
    rows: list[tuple[str, str]] = []
    for line in DEV_FILE.read_text(encoding="utf-8").splitlines():
        _, english, spanish = line.split("\t")
        rows += [(english, "en"), (spanish, "es")]
    return rows


def _accuracy(candidates: tuple[str, ...] | None) -> float:
    rows = _dev_rows()
    hits = 0
    for text, lang in rows:
        ranked = detect(text, candidates)
        hits += bool(ranked) and ranked[0][0] == lang
    return hits / len(rows)


def test_dev_file_accuracy_en_vs_es() -> None:
    assert _accuracy(("en", "es")) >= 0.97  # measured 0.991 on 800 strings


def test_dev_file_accuracy_among_all_languages() -> None:
    assert _accuracy(None) >= 0.95  # measured 0.984


@pytest.mark.parametrize(("text", "lang"), [
    ("The file was not found.", "en"),
    ("¿Dónde está la configuración?", "es"),
    ("Le fichier est introuvable.", "fr"),
    ("Die Datei wurde nicht gefunden.", "de"),
    ("O arquivo não foi encontrado.", "pt"),
    ("Il file non è stato trovato.", "it"),
    ("L'arxiu és massa gran per a la memòria", "ca"),
])
def test_typical_sentences(text: str, lang: str) -> None:
    assert detect(text)[0][0] == lang


def test_confidences_are_ranked_bounded_and_sum_below_one() -> None:
    ranked = detect("El servidor no responde y la conexión se ha cerrado.")
    confidences = [c for _, c in ranked]
    assert confidences == sorted(confidences, reverse=True)
    assert all(0.0 <= c <= 1.0 for c in confidences)
    assert sum(confidences) < 1.0
    assert {lang for lang, _ in ranked} <= set(LANGUAGES)


def test_candidates_narrow_the_answer_and_match_base_codes() -> None:
    ranked = detect("Não foi possível abrir o arquivo", candidates=["EN-US", "es", "xx"])
    assert {lang for lang, _ in ranked} <= {"en", "es"}
    assert ranked[0][0] == "es"  # the closest of the allowed ones


def test_more_evidence_gives_more_confidence() -> None:
    short = dict(detect("the file"))["en"]
    long = dict(detect("the file was not found in the folder and the server has no copy of it"))["en"]
    assert long > short


@pytest.mark.parametrize("text", ["", "12345 !!!", "RPC PKCS XPM"])
def test_no_cues_means_unknown(text: str) -> None:
    assert detect(text) == []


def test_huge_text_is_cheap_and_still_detected() -> None:
    assert detect("Esta es una prueba de rendimiento. " * 100_000)[0][0] == "es"
