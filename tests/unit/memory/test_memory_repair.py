from __future__ import annotations

import pytest
from memory_fakes import FakeTranslator

from peakgate.memory.repair import SpanEdit, repair, single_span_edit, substitute_once


def test_single_replaced_span_is_found_with_original_spelling() -> None:
    edit = single_span_edit("Could not open the Log file.", "Could not open the config file.")
    assert edit == SpanEdit(old="config", new="Log")
    assert single_span_edit("Delete all old files", "Delete all files") is None  # an insert, not a replace
    assert single_span_edit("Open red file now", "Open blue file later") is None  # two spans
    assert single_span_edit("a b c d e f", "a x y z w f") is None  # over max_words
    assert single_span_edit("a x y z f", "a b c d f", max_words=3) == SpanEdit("b c d", "x y z")


def test_substitute_once_needs_exactly_one_whole_word_occurrence() -> None:
    assert substitute_once("Abrir el fichero", "fichero", "registro") == "Abrir el registro"
    assert substitute_once("el gato y el gato", "gato", "perro") is None
    assert substitute_once("los gatos", "gato", "perro") is None  # not a whole word
    assert substitute_once("Abrir el fichero", "", "x") is None


def test_substitute_once_tolerates_a_capitalized_span_translation() -> None:
    assert substitute_once("Abrir el fichero", "Fichero", "Registro") == "Abrir el registro"
    assert substitute_once("Fichero no encontrado", "fichero", "registro") == "Registro no encontrado"


async def test_repair_substitutes_the_new_span() -> None:
    fake = FakeTranslator({"config": "configuración", "log": "registro"})
    result = await repair("Could not read the log file", "Could not read the config file",
                          "No se pudo leer el fichero de configuración", score=0.82, translate=fake,
                          source_lang="en", target_lang="es")
    assert result.kind == "repaired" and result.score == 0.82
    assert result.text == "No se pudo leer el fichero de registro"
    assert fake.calls == [(("config", "log"), "en", "es")]  # one call with both spans


@pytest.mark.parametrize(("target", "why"), [
    ("No se pudo leer el fichero", "not exactly once"),  # old span's translation absent
    ("configuración y configuración", "not exactly once"),  # twice
])
async def test_repair_falls_back_when_the_span_cannot_be_located(target: str, why: str) -> None:
    fake = FakeTranslator({"config": "configuración", "log": "registro"})
    result = await repair("read the log file", "read the config file", target, score=0.8, translate=fake,
                          source_lang="en", target_lang="es")
    assert result.kind == "full_translation_needed" and why in result.reason and result.text is None


async def test_repair_does_not_call_the_engine_for_complex_diffs() -> None:
    fake = FakeTranslator({})
    result = await repair("Totally different words here", "Could not read the config file", "x", score=0.4,
                          translate=fake, source_lang="en", target_lang="es")
    assert result.kind == "full_translation_needed" and fake.calls == []


async def test_repair_rejects_a_bad_engine_answer() -> None:
    async def wrong_shape(texts: object, sl: str, tl: str) -> list[str]:
        return ["only one"]

    result = await repair("read the log file", "read the config file", "leer configuración", score=0.8,
                          translate=wrong_shape, source_lang="en", target_lang="es")
    assert result.kind == "full_translation_needed"
