"""Restoring placeholders from engine output: tolerant of what engines do to them, never losing a value."""

from __future__ import annotations

import pytest

from peakgate.redaction import RedactionConfig, Redactor, first_free_number, placeholder, restore, substitute

MAPPING = {"[P1]": "jane@example.com", "[P2]": "+34 612 345 678"}


@pytest.mark.parametrize("translated", [
    "Escribe a [P1] o llama al [P2].",
    "Escribe a [ P1 ] o llama al [P 2].",  # spaces inserted
    "Escribe a [p1] o llama al [p2].",  # lower-cased
    "Escribe a ［P1］ o llama al ［ P2 ］.",  # full-width brackets
    "Escribe a P1 o llama al P2.",  # brackets dropped
    "Escribe a [P1] o llama al P 2.",  # one bracketed, one bare with a space
])
def test_engine_mangling_is_tolerated(translated: str) -> None:
    assert restore(translated, MAPPING) == "Escribe a jane@example.com o llama al +34 612 345 678."


def test_duplicated_placeholder_repeats_the_value() -> None:
    assert restore("[P1], [P1] y [P2]", MAPPING) == "jane@example.com, jane@example.com y +34 612 345 678"


def test_missing_placeholder_value_is_appended() -> None:
    assert restore("Escribe a [P1].  ", MAPPING) == "Escribe a jane@example.com. +34 612 345 678"
    assert restore("nada", MAPPING) == "nada jane@example.com +34 612 345 678"


def test_ambiguous_bare_token_is_not_trusted() -> None:
    # Two bare "P2"s: either could be ours, so the value is appended and the text left alone.
    assert restore("[P1] P2 P2", MAPPING) == "jane@example.com P2 P2 +34 612 345 678"


def test_unknown_placeholders_are_left_alone() -> None:
    assert restore("[P1] y [P9]", {"[P1]": "x"}) == "x y [P9]"
    assert restore("sin cambios [P1]", {}) == "sin cambios [P1]"


def test_restored_values_are_not_rescanned() -> None:
    # A value that itself looks like a placeholder must not be expanded again.
    assert restore("[P1] [P2]", {"[P1]": "[P2]", "[P2]": "P1"}) == "[P2] P1"


def test_user_text_that_looks_like_a_placeholder_survives_a_round_trip() -> None:
    redactor = Redactor.from_config(RedactionConfig(enabled=True))
    text = "Literal [P1] and p2 stay; mail jane@example.com"
    out = redactor.redact(text)
    assert out.text == "Literal [P1] and p2 stay; mail [P3]"
    assert restore(out.text, out.mapping) == text


def test_numbering_starts_past_anything_placeholder_like() -> None:
    assert first_free_number("no tokens") == 1
    assert first_free_number("[P4] and ［p 7］ and P2") == 8
    assert placeholder(3) == "[P3]"


def test_substitute_shares_equal_values_and_round_trips() -> None:
    text = "a X b Y c X"
    done = substitute(text, [(2, 3, "X"), (6, 7, "Y"), (10, 11, "X")])
    assert done.text == "a [P1] b [P2] c [P1]"
    assert done.placeholders == ("[P1]", "[P2]", "[P1]")
    assert restore(done.text, done.mapping) == text


def test_redact_restore_round_trip_on_every_kind() -> None:
    text = ("Mail jane.doe@example.com or call +34 612 345 678; card 4111 1111 1111 1111, "
            "IBAN DE89 3704 0044 0532 0130 00, see https://example.com/a?b=1. Ticket AB-20931-X.")
    out = Redactor.from_config(RedactionConfig(enabled=True)).redact(text)
    assert {s.kind for s in out.spans} == {"email", "phone", "card", "iban", "url", "id"}
    assert all(value not in out.text for value in out.mapping.values())
    assert restore(out.text, out.mapping) == text
