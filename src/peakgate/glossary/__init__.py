"""DeepL-compatible glossaries: entry parsing, per-tenant storage, and term enforcement around engines."""

from peakgate.glossary.entries import (
    ENTRIES_FORMATS,
    EntriesFormat,
    Entry,
    EntryLimits,
    InvalidEntries,
    parse_entries,
    to_tsv,
)
from peakgate.glossary.protect import Protected, TermMatcher, protect, restore_terms
from peakgate.glossary.resolve import GlossaryMismatch, GlossaryResolver
from peakgate.glossary.shield import Shielded, shield, unshield
from peakgate.glossary.store import (
    Dictionary,
    DictionaryEntries,
    DictionaryNotFound,
    Glossary,
    GlossaryNotFound,
    GlossaryStore,
    GlossaryStoreError,
    GlossaryStoreKind,
    SqliteGlossaryStore,
    TooManyGlossaries,
    build_glossary_store,
    iso_utc,
)

__all__ = [
    "ENTRIES_FORMATS", "Dictionary", "DictionaryEntries", "DictionaryNotFound", "EntriesFormat", "Entry",
    "EntryLimits", "Glossary", "GlossaryMismatch", "GlossaryNotFound",
    "GlossaryResolver", "GlossaryStore", "GlossaryStoreError", "GlossaryStoreKind", "InvalidEntries", "Protected",
    "Shielded", "SqliteGlossaryStore", "TermMatcher", "TooManyGlossaries", "build_glossary_store", "iso_utc",
    "parse_entries", "protect", "restore_terms", "shield", "to_tsv", "unshield",
]
