"""Glossary entries in DeepL's TSV and CSV formats: parse strictly, report the line at fault.

DeepL's rules: one entry per line, source term first; blank lines are skipped; terms are trimmed, must not
be empty, must not hold control characters or Unicode line separators, and are at most 1024 UTF-8 bytes;
a source term appears once. CSV may carry two more columns, source and target language, which must then
match the glossary's. The whole glossary is at most 10 MiB.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from peakgate.errors import BadRequest

EntriesFormat = Literal["tsv", "csv"]
ENTRIES_FORMATS: tuple[EntriesFormat, ...] = ("tsv", "csv")
MAX_TERM_BYTES = 1024
MAX_GLOSSARY_BYTES = 10 * 1024 * 1024
MAX_ENTRIES = 100_000


class InvalidEntries(BadRequest):
    code = "invalid_glossary_entries"


@dataclass(frozen=True, slots=True)
class Entry:
    source: str
    target: str


@dataclass(frozen=True, slots=True)
class EntryLimits:
    max_entries: int = MAX_ENTRIES
    max_bytes: int = MAX_GLOSSARY_BYTES
    max_term_bytes: int = MAX_TERM_BYTES


def _bad_char(term: str) -> bool:
    return any(ord(ch) < 32 or 127 <= ord(ch) <= 159 or ch in "\u2028\u2029" for ch in term)


def _term(raw: str, line: int, side: str, limits: EntryLimits) -> str:
    term = raw.strip()
    if not term:
        raise InvalidEntries(f"glossary entry on line {line} has an empty {side} term")
    if _bad_char(term):
        raise InvalidEntries(f"glossary entry on line {line}: {side} term {term!r} holds a control character")
    if len(term.encode()) > limits.max_term_bytes:
        raise InvalidEntries(f"glossary entry on line {line}: {side} term is over {limits.max_term_bytes} bytes")
    return term


def _tsv_rows(text: str) -> Iterator[tuple[int, list[str]]]:
    # Only \n (or \r\n) ends a line, as in DeepL; str.splitlines would also split on \x85 or \u2028,
    # which must instead be refused as control characters, on the right line.
    for n, line in enumerate(text.split("\n"), 1):
        if line.strip():
            yield n, line.removesuffix("\r").split("\t")


def _csv_rows(text: str) -> Iterator[tuple[int, list[str]]]:
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    try:
        for row in reader:
            if any(cell.strip() for cell in row):
                yield reader.line_num, row
    except csv.Error as exc:
        raise InvalidEntries(f"glossary CSV is malformed near line {reader.line_num}: {exc}") from exc


def _check_langs(row: list[str], line: int, langs: tuple[str, str] | None) -> None:
    if langs is None:
        return
    given = (row[2].strip().lower(), row[3].strip().lower())
    if given != langs:
        raise InvalidEntries(
            f"glossary entry on line {line} is for {given[0]}→{given[1]}, not the glossary's {langs[0]}→{langs[1]}")


def parse_entries(text: str, fmt: str = "tsv", *, langs: tuple[str, str] | None = None,
                  limits: EntryLimits = EntryLimits()) -> tuple[Entry, ...]:
    """Entries in file order; `langs` (lower-case source, target) checks CSV's optional language columns."""
    if fmt not in ENTRIES_FORMATS:
        raise InvalidEntries(f"entries_format {fmt!r} is not supported: use tsv or csv")
    if len(text.encode()) > limits.max_bytes:
        raise InvalidEntries(f"glossary entries are over the {limits.max_bytes}-byte limit")
    rows = _tsv_rows(text) if fmt == "tsv" else _csv_rows(text)
    seen: dict[str, int] = {}
    out: list[Entry] = []
    for line, row in rows:
        if len(row) not in ((2,) if fmt == "tsv" else (2, 4)):
            want = "a source and a target term separated by a tab" if fmt == "tsv" else "2 or 4 columns"
            raise InvalidEntries(f"glossary entry on line {line} must have {want}")
        if len(row) == 4:
            _check_langs(row, line, langs)
        entry = Entry(_term(row[0], line, "source", limits), _term(row[1], line, "target", limits))
        if entry.source in seen:
            raise InvalidEntries(
                f"glossary entry on line {line} duplicates source term {entry.source!r} (line {seen[entry.source]})")
        seen[entry.source] = line
        out.append(entry)
        if len(out) > limits.max_entries:
            raise InvalidEntries(f"glossary has more than {limits.max_entries} entries")
    if not out:
        raise InvalidEntries("glossary has no entries")
    return tuple(out)


def to_tsv(entries: tuple[Entry, ...] | list[Entry]) -> str:
    return "\n".join(f"{e.source}\t{e.target}" for e in entries)
