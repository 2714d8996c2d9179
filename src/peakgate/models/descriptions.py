"""Training text from Debian package descriptions (apt's `Translation-en` / `Translation-es` indexes).

`apt-get -o Acquire::Languages=en,es update` leaves them in /var/lib/apt/lists/. The English ones are a
large monolingual corpus for the teacher to distil; the Spanish ones are human translations, joined to
the English by `Description-md5` and aligned paragraph by paragraph, then sentence by sentence, only
where the counts match: a translator who merged or split sentences gives us nothing we can trust.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterable, Iterator
from pathlib import Path

from peakgate.models.corpus import MAX_CHARS

APT_HELPER = "/usr/lib/apt/apt-helper"
_COMPRESSED = (".lz4", ".gz", ".xz", ".zst", ".bz2", ".lzma")
# A list item: "* foo", "- foo", "+ foo", "o foo", "1. foo", "a) foo".
_BULLET = re.compile(r"^(?:[*•+\-o]|\w{1,2}[.)])\s")
# URLs, e-mail, paths, options, markup and code: text a translator leaves alone, or that is not prose.
_NOT_PROSE = re.compile(r"https?://|www\.|\S@\S|[{}<>\[\]$`|\\_=#]|::|/\w+/|\w\(\)|(?:^|\s)--?\w")
# Sentence end: terminal punctuation, space, then what starts a sentence in English or Spanish.
_BOUNDARY = re.compile(r"(?<=[.!?])[\"')]?\s+(?=[\"'(¿¡]?[^\W\d_])")
# "e.g.", "A.D.", "etc.", "Dr.": a period that ends an abbreviation, not a sentence.
_ABBREVIATION = re.compile(r"(?:\b(?:[A-Za-z]\.)+|\b(?:e\.g|i\.e|etc|vs|cf|approx|incl|Dr|Mr|Mrs|Sr|Sra|ej|p\.ej)\.)$")
MIN_RATIO, MAX_RATIO = 0.6, 2.0  # Spanish length / English length of a plausible translation


def find_indexes(lists_dir: Path, lang: str) -> list[Path]:
    """The `Translation-<lang>` indexes apt fetched, compressed or not."""
    return sorted(p for p in lists_dir.glob(f"*_i18n_Translation-{lang}*") if p.is_file())


def read_index(path: Path) -> str:
    # apt may keep indexes compressed (lz4 by default); apt-helper decompresses whatever apt wrote.
    if path.suffix in _COMPRESSED:
        return subprocess.run([APT_HELPER, "cat-file", str(path)], check=True, capture_output=True).stdout.decode()
    return path.read_text(encoding="utf-8")


def stanzas(text: str) -> Iterator[dict[str, str]]:
    """deb822 paragraphs; a multi-line value keeps its continuation lines as written (leading space and all)."""
    fields: dict[str, str] = {}
    key = ""
    for line in text.splitlines():
        if not line.strip():
            if fields:
                yield fields
            fields, key = {}, ""
        elif line[0] in " \t" and key:
            fields[key] += "\n" + line
        elif ":" in line:
            key, value = line.split(":", 1)
            fields[key] = value.strip()
    if fields:
        yield fields


def descriptions(texts: Iterable[str], lang: str) -> dict[str, str]:
    """`Description-md5` → the `Description-<lang>` value, over every index given."""
    out: dict[str, str] = {}
    field = f"Description-{lang}"
    for text in texts:
        for stanza in stanzas(text):
            md5, value = stanza.get("Description-md5"), stanza.get(field)
            if md5 and value:
                out.setdefault(md5, value)
    return out


def split_sentences(text: str) -> list[str]:
    sentences: list[str] = []
    start = 0
    for match in _BOUNDARY.finditer(text):
        head = text[start : match.start()].rstrip("\"')")
        if not text[match.end() :].lstrip("\"'(¿¡")[:1].isupper() or _ABBREVIATION.search(head):
            continue
        sentences.append(text[start : match.start()].strip())
        start = match.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


def paragraphs(description: str) -> list[list[str]]:
    """Sentences per paragraph: the short description first, then each " ."-separated paragraph's prose.

    A paragraph's prose ends at its first list item or preformatted (two-space) line; the paragraph
    itself is kept, possibly empty, so that the English and Spanish paragraph counts stay comparable.
    """
    short, *long_lines = description.split("\n")
    out: list[list[str]] = [[short.strip()]]
    current: list[str] = []
    in_prose = True
    for line in [*long_lines, " ."]:
        if line.strip() == ".":
            out.append(split_sentences(" ".join(current)))
            current, in_prose = [], True
        elif line.startswith(("  ", "\t", " \t")) or _BULLET.match(line.strip()):
            in_prose = False
        elif in_prose:
            current.append(line.strip())
    return out if long_lines else out[:1]


def usable(sentence: str) -> bool:
    """Prose of a trainable size: no URLs, paths or code, mostly letters."""
    if len(sentence.split()) < 2 or len(sentence) > MAX_CHARS or _NOT_PROSE.search(sentence):
        return False
    letters = sum(ch.isalpha() for ch in sentence)
    return letters >= 0.6 * len(sentence) and any(ch.islower() for ch in sentence)


def english_sentences(english: dict[str, str]) -> list[str]:
    """Every distinct usable sentence of the English descriptions."""
    return sorted({s for d in english.values() for para in paragraphs(d) for s in para if usable(s)})


def aligned_pairs(english: dict[str, str], spanish: dict[str, str]) -> dict[str, str]:
    """English sentence → human Spanish, where paragraph and sentence counts match on both sides."""
    out: dict[str, str] = {}
    for md5 in sorted(english.keys() & spanish.keys()):
        en_paras, es_paras = paragraphs(english[md5]), paragraphs(spanish[md5])
        if len(en_paras) != len(es_paras):
            continue
        for en_para, es_para in zip(en_paras, es_paras, strict=True):
            if len(en_para) != len(es_para):
                continue
            for en, es in zip(en_para, es_para, strict=True):
                if _plausible(en, es):
                    out.setdefault(en, es)
    return out


def _plausible(en: str, es: str) -> bool:
    return usable(en) and usable(es) and en != es and MIN_RATIO <= len(es) / len(en) <= MAX_RATIO
