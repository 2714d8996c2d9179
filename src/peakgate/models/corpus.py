"""Training text from the system's gettext catalogs, with held-out catalogs and the dev set kept out."""

from __future__ import annotations

import gettext
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

MAX_CHARS = 200


@dataclass(frozen=True)
class CatalogEntry:
    catalog: str
    source: str
    target: str


def read_heldout(path: Path) -> frozenset[str]:
    names = (line.split("#", 1)[0].strip() for line in path.read_text(encoding="utf-8").splitlines())
    return frozenset(n for n in names if n)


def _clean(text: str) -> str | None:
    text = text.strip()
    if not text or "\n" in text or len(text) > MAX_CHARS:
        return None
    if not any(ch.isalpha() for ch in text) or any(ord(ch) < 32 for ch in text):
        return None
    return text


def _entries(mo_path: Path) -> Iterator[tuple[str, str]]:
    try:
        with mo_path.open("rb") as fh:
            catalog = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
    except (OSError, UnicodeDecodeError, ValueError, IndexError, KeyError):  # a broken catalog is skipped, not fatal
        return
    for raw_key, value in catalog.items():
        key = raw_key
        if isinstance(raw_key, tuple):  # plural forms: keep the singular only
            if raw_key[1] != 0:
                continue
            key = raw_key[0]
        if not key or "\x04" in key:  # header entry / message context
            continue
        src, tgt = _clean(key), _clean(value)
        if src is not None:
            yield src, tgt or ""


def iter_catalogs(locale_dir: Path, lang: str | None = None) -> Iterator[Path]:
    pattern = f"{lang}/LC_MESSAGES/*.mo" if lang else "*/LC_MESSAGES/*.mo"
    yield from sorted(locale_dir.glob(pattern))


def english_sentences(locale_dir: Path, heldout: frozenset[str]) -> list[str]:
    """Every distinct English msgid of the non-held-out catalogs, minus any held-out msgid."""
    banned = heldout_sources(locale_dir, heldout)
    seen: set[str] = set()
    for mo in iter_catalogs(locale_dir):
        if mo.name in heldout:
            continue
        for src, _ in _entries(mo):
            if src not in banned:
                seen.add(src)
    return sorted(seen)


def human_pairs(locale_dir: Path, lang: str, heldout: frozenset[str]) -> list[CatalogEntry]:
    banned = heldout_sources(locale_dir, heldout)
    out: dict[str, CatalogEntry] = {}
    for mo in iter_catalogs(locale_dir, lang):
        # iso-codes catalogs are tens of thousands of place and language names: a gazetteer, not UI text.
        if mo.name in heldout or mo.name.startswith("iso_"):
            continue
        for src, tgt in _entries(mo):
            if tgt and src not in banned and src != tgt:
                out.setdefault(src, CatalogEntry(mo.name, src, tgt))
    return [out[k] for k in sorted(out)]


def heldout_sources(locale_dir: Path, heldout: frozenset[str]) -> frozenset[str]:
    """Every msgid of the held-out catalogs: banned as training source text, whatever corpus it turns up in."""
    return frozenset(src for mo in iter_catalogs(locale_dir) if mo.name in heldout for src, _ in _entries(mo))


def read_dev_sources(path: Path) -> frozenset[str]:
    """The English column of the dev set (catalog, English, Spanish): never a training source."""
    rows = (line.split("\t") for line in path.read_text(encoding="utf-8").splitlines())
    return frozenset(row[1].strip() for row in rows if len(row) >= 3)


def write_lines(path: Path, lines: Iterable[str]) -> int:
    count = 0
    with path.open("w", encoding="utf-8") as fh:
        for line in lines:
            fh.write(line + "\n")
            count += 1
    return count
