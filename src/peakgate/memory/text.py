"""Pure text helpers shared by the store, the fuzzy index and TMX: normalization, tokens, language codes."""

from __future__ import annotations

import re
import unicodedata

_SPACE = re.compile(r"\s+")
_WORD = re.compile(r"\w+")
_LANG = re.compile(r"^[A-Za-z]{2,3}(-[A-Za-z0-9]{2,8})*$")


def normalize(text: str) -> str:
    """The exact-match key: NFC, every whitespace run collapsed to one space, trimmed. Case is kept."""
    return _SPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def fold(text: str) -> str:
    """The fuzzy comparison form: normalized and case-folded (case alone should not cost similarity)."""
    return normalize(text).casefold()


def word_tokens(folded: str) -> frozenset[str]:
    return frozenset(_WORD.findall(folded))


def valid_lang(code: str) -> bool:
    """BCP-47-ish: a 2-3 letter primary subtag and optional 2-8 character subtags."""
    return bool(_LANG.match(code))


def lang_key(code: str, *, keep_region: bool = False) -> str:
    """How a language code is stored: lower case, and by default only the primary subtag.

    Serving pairs are primary subtags ("en", "es"), so an "en-US" TMX entry must land where an "en" lookup looks.
    """
    code = code.strip().replace("_", "-").lower()
    return code if keep_region else code.split("-", 1)[0]
