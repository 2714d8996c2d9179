"""The pure quality checks: identity, loops, source language, length ratio, confidence, and the pick."""

from __future__ import annotations

import pytest

from peakgate.quality.estimate import REASONS, Verdict, assess, loop_in, needs_translation, prefer_fallback, same_text
from peakgate.quality.settings import QualityConfig

CONFIG = QualityConfig()
PAIR = ("en", "es")


def verdict(source: str, output: str, *, confidence: float | None = None,
            language: tuple[str, float] | None = None, config: QualityConfig = CONFIG) -> Verdict:
    return assess(source, output, pair=PAIR, confidence=confidence, output_language=language, config=config)


@pytest.mark.parametrize(("source", "output"), [("Hello", "Hello"), ("Hello world", "hello world."),
                                                ("Good morning", "Good  morning"), ("Cancel", "Cancel")])
def test_an_output_handing_back_its_input_fails_as_identity(source: str, output: str) -> None:
    assert verdict(source, output).reasons == ("identity",)


@pytest.mark.parametrize("text", ["No", "OK", "TIFF", "PDF", "X.509", "42"])
def test_short_words_acronyms_and_numbers_may_stay_as_they_are(text: str) -> None:
    assert not needs_translation(text)
    assert verdict(text, text).ok


def test_same_text_ignores_case_spacing_and_outer_punctuation_only() -> None:
    assert same_text("Hello world!", " hello   WORLD ")
    assert not same_text("Hello world", "Hola mundo")


@pytest.mark.parametrize(("output", "run"), [
    ("No se pudo obtener el ancho de imagen (mmmmmmmmmmmmád de la imagen TIFFFFFFFFFF)", "mmmmmmmmmmmm"),
    ("Esto debería NO NO NO NO se hace", " NO NO NO NO"),
    ("see http://wwww.org/isrc/isrc/isrc/isrc", "wwww"),
    ("que esté esté esté segura", " esté esté esté"),
])
def test_a_repetition_run_is_a_loop(output: str, run: str) -> None:
    assert loop_in("source", output) == run
    assert "loop" in verdict("A sentence that needs translating", output).reasons


@pytest.mark.parametrize(("source", "output"), [
    ("Wait....", "Espere...."),  # no letter in the run
    ("Ferrocarril", "Ferrocarril del norte"),  # "rr" twice is Spanish, not a loop
    ("The AAAA record", "El registro AAAA"),  # copied from the source
    ("Loading ----- done", "Cargando ----- hecho"),
])
def test_repeated_punctuation_spelling_and_copied_runs_are_not_loops(source: str, output: str) -> None:
    assert loop_in(source, output) is None


def test_output_detected_as_the_source_language_fails_at_the_threshold() -> None:
    text = "Re-authentication estuvo solicitado por el peer."
    at = CONFIG.source_language_confidence
    assert verdict("Re-authentication was requested by the peer.", text, language=("en", at)).reasons == (
        "source_language",)
    assert verdict("Re-authentication was requested.", text, language=("en", at - 0.01)).ok
    assert verdict("Re-authentication was requested.", text, language=("es", 0.99)).ok


def test_an_identical_output_is_judged_by_the_identity_rule_alone() -> None:
    assert verdict("No", "No", language=("en", 1.0)).ok  # "No" is Spanish too
    assert verdict("Hello", "Hello", language=("en", 1.0)).reasons == ("identity",)


def test_length_ratio_applies_to_long_enough_sources_within_the_pairs_bounds() -> None:
    source = "The file could not be saved."  # 28 characters
    assert verdict(source, "No se pudo guardar el archivo.").ok
    assert verdict(source, "No.").reasons == ("length_ratio",)
    wordy = "Se ha producido un error al guardar el fichero en el disco porque no queda espacio libre en él"
    assert verdict(source, wordy).reasons == ("length_ratio",)
    assert verdict("OK", "Aceptar").ok  # short sources vary too much to judge
    custom = QualityConfig(pair_length_ratio={"en-es": (0.95, 1.05)})
    assert verdict(source, "No se pudo guardar.", config=custom).reasons == ("length_ratio",)


def test_low_confidence_only_where_the_engine_gives_one() -> None:
    source, output = "Open the file", "Abrir el fichero"
    assert verdict(source, output, confidence=CONFIG.min_confidence - 0.01).reasons == ("low_confidence",)
    assert verdict(source, output, confidence=CONFIG.min_confidence).ok
    assert verdict(source, output, confidence=None).ok


def test_reasons_come_in_a_fixed_order() -> None:
    v = verdict("Could not get image width (bad TIFF file)", "TIFFFFFFFF " * 12, confidence=-3.0,
                language=("en", 0.95))
    assert v.reasons == tuple(r for r in REASONS if r != "identity")


def test_the_fallback_wins_only_by_failing_strictly_less() -> None:
    clean, unsure = Verdict(()), Verdict(("low_confidence",))
    looping, wrong = Verdict(("loop",)), Verdict(("identity", "low_confidence"))
    assert prefer_fallback(unsure, clean) and prefer_fallback(looping, unsure) and prefer_fallback(wrong, looping)
    assert not prefer_fallback(unsure, unsure) and not prefer_fallback(clean, clean)
    assert not prefer_fallback(unsure, looping)
