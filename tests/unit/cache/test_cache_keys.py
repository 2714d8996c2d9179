"""Cache keys: normalization, casing and final-mark folding, and that re-shaping never changes a result."""

from __future__ import annotations

import pytest

from peakgate.cache.keys import (
    Casing,
    KeyParts,
    Shape,
    apply,
    cache_key,
    canonicalize,
    detect_casing,
    fold_case,
    normalize_text,
    split_mark,
)
from peakgate.cache.settings import CacheConfig

PARTS = KeyParts(source="en", target="es", model="fast")
FOLD = CacheConfig()
RAW = CacheConfig(casefold=False, strip_punct=False)


def key(text: str, parts: KeyParts = PARTS, config: CacheConfig = FOLD) -> str:
    return cache_key(text, parts, config).key


def test_key_is_a_blake2b_hex_digest() -> None:
    digest = key("hello")
    assert len(digest) == 32
    int(digest, 16)


def test_nfc_and_whitespace_are_normalized() -> None:
    decomposed = "cafe\u0301  au\tlait\n"
    assert normalize_text(decomposed) == "café au lait"
    assert key(decomposed, config=RAW) == key(" café au lait", config=RAW)


@pytest.mark.parametrize(
    ("text", "casing"),
    [
        ("hello world", Casing.LOWER),
        ("123 ¿?", Casing.LOWER),
        ("Hello world", Casing.FIRST),
        ("¿Qué tal?", Casing.FIRST),
        ("A", Casing.FIRST),
        ("HELLO WORLD", Casing.UPPER),
        ("Hello World", Casing.MIXED),
        ("iPhone", Casing.MIXED),
        ("HELLO world", Casing.MIXED),
    ],
)
def test_detect_casing(text: str, casing: Casing) -> None:
    assert detect_casing(text) is casing


def test_case_variants_share_a_key_but_mixed_does_not() -> None:
    assert key("hello world") == key("Hello world") == key("HELLO WORLD")
    assert key("Hello World") != key("hello world")
    assert key("iPhone") != key("iphone")


def test_casefold_off_keys_exactly() -> None:
    config = CacheConfig(casefold=False)
    assert key("Hello", config=config) != key("hello", config=config)
    assert cache_key("Hello", PARTS, config).shape.casing is Casing.MIXED


def test_folding_that_would_not_round_trip_is_refused() -> None:
    assert fold_case("İstanbul") == ("İstanbul", Casing.MIXED)  # "İ".lower() is two code points
    assert fold_case("Hello") == ("hello", Casing.FIRST)


@pytest.mark.parametrize(
    ("text", "split"),
    [
        ("Hello.", ("Hello", ".")),
        ("Hello…", ("Hello", "…")),
        ("Hello...", ("Hello", "...")),
        ("Hello?", ("Hello?", "")),
        ("Hello!", ("Hello!", "")),
        ("Hello?.", ("Hello?.", "")),
        ("Hello..", ("Hello..", "")),
        (".", (".", "")),
    ],
)
def test_split_mark_only_takes_sentence_final_period_or_ellipsis(text: str, split: tuple[str, str]) -> None:
    assert split_mark(text) == split


def test_final_period_variants_share_a_key_but_question_marks_do_not() -> None:
    assert key("Hello.") == key("Hello") == key("hello…")
    assert key("Hello?") != key("Hello")
    assert key("Hello!") != key("Hello")
    assert key("Hello.", config=RAW) != key("Hello", config=RAW)


@pytest.mark.parametrize(
    "parts",
    [
        KeyParts(source="fr", target="es", model="fast"),
        KeyParts(source="en", target="de", model="fast"),
        KeyParts(source="en", target="es", model="quality"),
        KeyParts(source="en", target="es", model="fast", formality="more"),
        KeyParts(source="en", target="es", model="fast", glossary_id="g1"),
        KeyParts(source="en", target="es", model="fast", format="html"),
        KeyParts(source="en", target="es", model="fast", tenant="acme"),
    ],
)
def test_every_output_changing_part_changes_the_key(parts: KeyParts) -> None:
    assert key("hello", parts) != key("hello")


def test_tenant_is_ignored_without_isolation() -> None:
    shared = CacheConfig(tenant_isolation=False)
    acme = KeyParts(source="en", target="es", model="fast", tenant="acme")
    assert key("hello", acme, shared) == key("hello", PARTS, shared)


def test_fields_cannot_be_forged_across_boundaries() -> None:
    a = KeyParts(source="en", target="es", model="a b")
    b = KeyParts(source="en", target="es a", model="b")
    assert key("x", a) != key("x", b)


def round_trip(source: str, translation: str, requester: str) -> str | None:
    """Store `translation` of `source`, then serve it to `requester` (same key required)."""
    stored_key, stored_shape = cache_key(source, PARTS, FOLD)
    hit_key, hit_shape = cache_key(requester, PARTS, FOLD)
    assert stored_key == hit_key
    stored = canonicalize(translation, stored_shape)
    return None if stored is None else apply(stored, hit_shape)


@pytest.mark.parametrize(
    ("source", "translation", "requester", "served"),
    [
        ("Hello world.", "Hola mundo.", "Hello world.", "Hola mundo."),
        ("Hello world.", "Hola mundo.", "hello world", "hola mundo"),
        ("Hello world.", "Hola mundo.", "HELLO WORLD…", "HOLA MUNDO…"),
        ("hello world", "hola mundo", "Hello world...", "Hola mundo..."),
        ("HELLO WORLD", "HOLA MUNDO", "Hello world", "Hola mundo"),
        ("How are you?", "¿Cómo estás?", "HOW ARE YOU?", "¿CÓMO ESTÁS?"),
        ("how are you?", "¿cómo estás?", "How are you?", "¿Cómo estás?"),
        ("hello madrid", "hola Madrid", "Hello madrid.", "Hola Madrid."),
    ],
)
def test_shapes_round_trip(source: str, translation: str, requester: str, served: str) -> None:
    assert round_trip(source, translation, requester) == served


def test_the_owner_shape_always_gets_its_own_translation_back() -> None:
    for source, translation in [("Hello.", "Hola."), ("HELLO", "HOLA"), ("hi", "Hola"), ("Hi…", "¡Hola…")]:
        shape = cache_key(source, PARTS, FOLD).shape
        stored = canonicalize(translation, shape)
        assert stored is not None
        assert apply(stored, shape) == translation


@pytest.mark.parametrize(
    ("source", "translation"),
    [
        ("Hello.", "こんにちは。"),  # the mark was rendered differently: re-attaching "." would be wrong
        ("Hello", "Hola."),  # a kept final "." would be doubled for a "Hello." requester
        ("Hello", "iPhone"),  # first letter not upper: re-casing would produce "IPhone"
        ("HELLO", "Hola"),  # not all caps: upper-casing would not give it back
    ],
)
def test_translations_that_cannot_be_reshaped_are_not_stored(source: str, translation: str) -> None:
    assert canonicalize(translation, cache_key(source, PARTS, FOLD).shape) is None


def test_without_folding_translations_are_stored_as_is() -> None:
    shape = cache_key("Hello.", PARTS, RAW).shape
    assert shape == Shape()
    assert shape.canonicalize("Hola.") == "Hola."
    assert shape.apply("Hola.") == "Hola."


@pytest.mark.parametrize("target", ["ja", "zh-Hans", "zh_TW", "hi"])
def test_targets_with_their_own_full_stop_keep_the_mark_in_the_key(target: str) -> None:
    parts = KeyParts(source="en", target=target, model="fast")
    dotted, plain = cache_key("Hello.", parts, FOLD), cache_key("Hello", parts, FOLD)
    assert dotted.key != plain.key
    assert dotted.shape.mark == ""
    assert dotted.shape.canonicalize("こんにちは。") == "こんにちは。"
    assert key("Hello.", parts) == key("hello.", parts)  # casing still folds
