"""Cache keys: normalize the source so equivalent requests share an entry, without changing any output.

A source is reduced to a key text plus a `Shape` recording what was taken off (its casing pattern and a
sentence-final "." or "…"). The cache stores translations in the same reduced form (`canonicalize`) and a hit
is dressed back in the requester's own shape (`apply`). Both directions are checked to round-trip exactly;
whatever would not round-trip is left unfolded (sources) or not stored (translations), so folding can only
ever lose a cache hit, never alter a result.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import NamedTuple

import msgspec

from peakgate.cache.settings import CacheConfig

KEY_VERSION = "v1"  # bump when normalization changes, so old shared entries stop matching
_WHITESPACE = re.compile(r"\s+")
# Longest first, so "..." is one mark rather than a "." after "..". "?" and "!" stay in the key: Spanish
# opens them with "¿" / "¡", so they change the output, not just its last character.
_MARKS = ("...", "…", ".")
# Targets that end sentences with their own mark ("。", "।", "။", ...): a source's "." is not carried over
# verbatim, so it cannot be stripped and re-attached; those keys keep the source's mark instead.
_OWN_FULL_STOP = frozenset({"am", "bn", "bo", "hi", "hy", "ja", "km", "lo", "mr", "my", "ne", "pa", "th", "ti",
                            "ur", "yue", "zh"})


class Casing(StrEnum):
    LOWER = "lower"  # nothing upper-case: stored and served as is
    FIRST = "first"  # first cased letter upper, the rest lower
    UPPER = "upper"  # ALL CAPS (two or more cased letters)
    MIXED = "mixed"  # anything else (iPhone, Title Case): keyed as written, never folded


@dataclass(frozen=True, slots=True)
class Shape:
    """What `cache_key` took off a source, to put back on a stored translation."""

    casing: Casing = Casing.MIXED
    mark: str = ""  # the sentence-final mark stripped from the source, "" if none
    strip_marks: bool = False  # whether stored translations are kept without a final mark

    def canonicalize(self, translation: str) -> str | None:
        return canonicalize(translation, self)

    def apply(self, stored: str) -> str:
        return apply(stored, self)


@dataclass(frozen=True, slots=True)
class KeyParts:
    """Everything besides the text that changes the output."""

    source: str  # the resolved source language (after detection)
    target: str
    model: str  # the model name, or the tier when the tier alone picks the model
    formality: str | None = None
    glossary_id: str | None = None
    format: str = "text"
    tenant: str | None = None  # only keyed under `tenant_isolation`


class CacheKey(NamedTuple):
    key: str
    shape: Shape


def normalize_text(text: str) -> str:
    """NFC, inner whitespace runs collapsed to one space, outer whitespace removed."""
    return _WHITESPACE.sub(" ", unicodedata.normalize("NFC", text)).strip()


def cache_key(text: str, parts: KeyParts, config: CacheConfig) -> CacheKey:
    """The digest every layer stores under, and the shape to re-apply on a hit."""
    body = normalize_text(text)
    mark = ""
    strip = config.strip_punct and _base_language(parts.target) not in _OWN_FULL_STOP
    if strip:
        body, mark = split_mark(body)
    casing = Casing.MIXED
    if config.casefold:
        body, casing = fold_case(body)
    tenant = parts.tenant if config.tenant_isolation else None
    fields = [KEY_VERSION, body, parts.source, parts.target, parts.model, parts.formality,
              parts.glossary_id, parts.format, tenant]
    # JSON keeps the fields unambiguous (no separator can be forged from inside the text).
    digest = hashlib.blake2b(_encode(fields), digest_size=16).hexdigest()
    return CacheKey(digest, Shape(casing, mark, strip))


_encode = msgspec.json.Encoder().encode  # same bytes as json.dumps(ensure_ascii=False, separators=(",", ":"))


def split_mark(text: str) -> tuple[str, str]:
    """`("Hello", ".")` for "Hello."; a run like ".." or "?." is left alone as ambiguous."""
    for mark in _MARKS:
        if text.endswith(mark):
            body = text[: -len(mark)]
            if body and not body.endswith((".", "…", "?", "!")):
                return body, mark
            return text, ""
    return text, ""


def detect_casing(text: str) -> Casing:
    lower = text.lower()
    if text == lower:
        return Casing.LOWER
    first = _first_cased(text)
    if first < 0:
        return Casing.LOWER
    if text == text.upper() and _has_two_cased(text, first):
        return Casing.UPPER
    if text[first].isupper() and text[first + 1 :] == text[first + 1 :].lower():
        return Casing.FIRST
    return Casing.MIXED


def fold_case(text: str) -> tuple[str, Casing]:
    """The key text and the source's casing; folded only where re-casing gives the source back exactly."""
    casing = detect_casing(text)
    folded = _lower(text, casing)
    if _recase(folded, casing) != text:
        return text, Casing.MIXED  # e.g. "İ" or "ß" whose case mapping is not one-to-one
    return folded, casing


def canonicalize(translation: str, shape: Shape) -> str | None:
    """The form to store a translation of a source with `shape` in, or None if it cannot be shared safely."""
    stored = translation
    if shape.strip_marks:
        if shape.mark:
            if not stored.endswith(shape.mark):
                return None  # e.g. "." rendered as "。": re-attaching the source's mark would be wrong
            stored = stored[: -len(shape.mark)]
        if stored.endswith((".", "…")):
            return None  # a final mark left on would be doubled for a "Hello." hit
    stored = _lower(stored, shape.casing)
    return stored if apply(stored, shape) == translation else None


def apply(stored: str, shape: Shape) -> str:
    """A stored translation in the requester's own casing and final mark."""
    return _recase(stored, shape.casing) + shape.mark


def _base_language(tag: str) -> str:
    return tag.replace("_", "-").split("-", 1)[0].lower()


def _first_cased(text: str) -> int:
    # Hot path (every cache key): the first character is almost always the cased one.
    if text and text[0].lower() != text[0].upper():
        return 0
    return next((i for i, c in enumerate(text) if c.lower() != c.upper()), -1)


def _has_two_cased(text: str, first: int) -> bool:
    return any(c.lower() != c.upper() for c in text[first + 1 :])


def _lower(text: str, casing: Casing) -> str:
    return _cased(text, casing, str.lower)


def _recase(text: str, casing: Casing) -> str:
    return _cased(text, casing, str.upper)


def _cased(text: str, casing: Casing, change: Callable[[str], str]) -> str:
    """`change` applied where `casing` says the case lives: everywhere (UPPER) or the first cased letter."""
    if casing is Casing.UPPER:
        return change(text)
    if casing is Casing.FIRST:
        i = _first_cased(text)
        return text if i < 0 else text[:i] + change(text[i]) + text[i + 1 :]
    return text
