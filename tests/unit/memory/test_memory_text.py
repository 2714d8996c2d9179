from __future__ import annotations

import pytest

from peakgate.memory.text import fold, lang_key, normalize, valid_lang, word_tokens


def test_normalize_is_nfc_and_collapses_whitespace_but_keeps_case() -> None:
    assert normalize("  Cafe\u0301 \t au\n\n lait ") == "Café au lait"
    assert normalize("Save File") != normalize("save file")


def test_fold_and_tokens() -> None:
    assert fold("  Open  FILE ") == "open file"
    assert word_tokens("can't open /tmp/x.so") == frozenset({"can", "t", "open", "tmp", "x", "so"})


@pytest.mark.parametrize("code", ["en", "es", "ast", "en-US", "zh-Hant-TW", "sr-Latn", "es-419"])
def test_valid_languages(code: str) -> None:
    assert valid_lang(code)


@pytest.mark.parametrize("code", ["", "e", "english", "en_US", "en-", "12", "en-a", "en-toolongsubtag"])
def test_invalid_languages(code: str) -> None:
    assert not valid_lang(code)


def test_lang_key_keeps_the_primary_subtag_unless_asked() -> None:
    assert lang_key("EN-us") == "en"
    assert lang_key("pt_BR", keep_region=True) == "pt-br"
