"""The translation-memory facade the service and CLI use, and the factory keyed by `TmConfig.backend`.

Scopes: a tenant sees its own entries first, then the shared tenant "" (imports meant for everyone). An exact
match in either wins over any fuzzy one; between fuzzy matches the shared one must score strictly higher.
Language codes are stored as lower-case primary subtags ("en-US" -> "en"), the way serving pairs name them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal, TextIO

from peakgate.clock import Clock
from peakgate.errors import BadRequest, ConfigError, InputTooLarge
from peakgate.memory.entry import SHARED_TENANT, AddResult, Origin, TmEntry, TmMatch
from peakgate.memory.fuzzy import FuzzyIndex
from peakgate.memory.repair import TranslateFn, repair
from peakgate.memory.settings import TmConfig
from peakgate.memory.sqlite_store import SqliteTmStore
from peakgate.memory.store import Scope, TmStore
from peakgate.memory.text import lang_key, normalize, valid_lang
from peakgate.memory.tmx import ImportReport, ProgressFn, TmxOptions, import_tmx
from peakgate.memory.tmx_writer import write_tmx

WallClock = Callable[[], datetime]
ResultKind = Literal["exact", "repaired", "fuzzy"]


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class TmResult:
    """What `lookup_or_repair` found. `text` is a usable translation for "exact" and "repaired"; for "fuzzy"
    it is None: the match is only a suggestion and the segment needs a full translation."""

    kind: ResultKind
    score: float
    entry: TmEntry
    text: str | None
    reason: str = ""


class TranslationMemory:
    def __init__(self, store: TmStore, config: TmConfig, *, wall_clock: WallClock = utc_now) -> None:
        self._store = store
        self._config = config
        self._wall_clock = wall_clock

    @property
    def config(self) -> TmConfig:
        return self._config

    @staticmethod
    def _scopes(tenant: str, source_lang: str, target_lang: str) -> list[Scope]:
        sl, tl = lang_key(source_lang), lang_key(target_lang)
        own = Scope(tenant, sl, tl)
        return [own] if tenant == SHARED_TENANT else [own, Scope(SHARED_TENANT, sl, tl)]

    def serves(self, tenant: str, source_lang: str, target_lang: str) -> bool:
        """Whether any lookup for this tenant and pair can match: most pairs hold nothing, and one check per
        request then skips every per-segment exact and fuzzy lookup."""
        if not self._config.enabled:
            return False
        return any(self._store.has_entries(scope) for scope in self._scopes(tenant, source_lang, target_lang))

    def exact(self, tenant: str, source_lang: str, target_lang: str, text: str) -> TmMatch | None:
        """An exact match (own, then shared) only: the cheap check that runs before the cache."""
        if not self._config.enabled or len(text) > self._config.max_entry_chars or not normalize(text):
            return None
        for scope in self._scopes(tenant, source_lang, target_lang):
            entry = self._store.exact(scope, text)
            if entry is not None:
                return TmMatch("exact", 1.0, entry)
        return None

    def lookup(self, tenant: str, source_lang: str, target_lang: str, text: str) -> TmMatch | None:
        """Exact (own, then shared), else the best fuzzy match at or above `fuzzy_threshold`, else None."""
        if not self._config.enabled or not normalize(text) or len(text) > self._config.max_entry_chars:
            return None  # nothing that long is stored, and a huge query would only cost fuzzy time
        found = self.exact(tenant, source_lang, target_lang, text)
        if found is not None:
            return found
        scopes = self._scopes(tenant, source_lang, target_lang)
        best: TmMatch | None = None
        for scope in scopes:
            for match in self._store.fuzzy(scope, text, threshold=self._config.fuzzy_threshold, limit=1):
                if best is None or match.score > best.score:
                    best = match
        return best

    async def lookup_or_repair(self, tenant: str, source_lang: str, target_lang: str, text: str,
                               translate: TranslateFn | None = None) -> TmResult | None:
        """`lookup`, then, for a fuzzy match, try the one-span repair with `translate` (when repair is on)."""
        match = self.lookup(tenant, source_lang, target_lang, text)
        if match is None:
            return None
        entry = match.entry
        if match.kind == "exact":
            return TmResult("exact", 1.0, entry, entry.target)
        if translate is None or not self._config.repair:
            return TmResult("fuzzy", match.score, entry, None, "repair is off")
        fixed = await repair(text, entry.source, entry.target, score=match.score, translate=translate,
                             source_lang=source_lang, target_lang=target_lang,
                             max_words=self._config.repair_max_words)
        if fixed.kind == "repaired" and fixed.text is not None:
            return TmResult("repaired", match.score, entry, fixed.text, fixed.reason)
        return TmResult("fuzzy", match.score, entry, None, fixed.reason)

    def _problem(self, e: TmEntry) -> str:
        if not valid_lang(e.source_lang) or not valid_lang(e.target_lang):
            return "invalid language code"
        if not normalize(e.source) or not normalize(e.target):
            return "empty source or target"
        if max(len(e.source), len(e.target)) > self._config.max_entry_chars:
            return f"entry over {self._config.max_entry_chars} characters"
        return ""

    def _entry(self, tenant: str, source_lang: str, target_lang: str, source: str, target: str, *,
               origin: Origin, model: str | None = None, score: float | None = None) -> TmEntry:
        return TmEntry(lang_key(source_lang), lang_key(target_lang), source, target, tenant, origin, model, score,
                       self._wall_clock().isoformat())

    def add_many(self, entries: Iterable[TmEntry]) -> AddResult:
        """Store entries in one transaction; empty, oversized or mis-labelled ones are counted as skipped."""
        skipped = 0

        def valid() -> Iterator[TmEntry]:
            nonlocal skipped
            for e in entries:
                if self._problem(e):
                    skipped += 1
                    continue
                yield TmEntry(lang_key(e.source_lang), lang_key(e.target_lang), e.source, e.target, e.tenant,
                              e.origin, e.model, e.score, e.created_at or self._wall_clock().isoformat())

        result = self._store.add_many(valid())
        return result + AddResult(skipped=skipped)

    def add(self, tenant: str, source_lang: str, target_lang: str, source: str, target: str, *,
            origin: Origin = "model", model: str | None = None, score: float | None = None) -> AddResult:
        """Write-through of one translation; never raises for a bad entry (it is reported as skipped)."""
        return self.add_many([self._entry(tenant, source_lang, target_lang, source, target, origin=origin, model=model,
                                          score=score)])

    def add_correction(self, tenant: str, source_lang: str, target_lang: str, source: str,
                       target: str) -> AddResult:
        """A person's fix: replaces whatever is stored. Raises BadRequest (InputTooLarge) for a bad entry."""
        entry = self._entry(tenant, source_lang, target_lang, source, target, origin="correction")
        problem = self._problem(entry)
        if problem:
            too_big = problem.startswith("entry over")
            raise (InputTooLarge if too_big else BadRequest)(f"translation memory correction rejected: {problem}")
        return self._store.add_many([entry])

    def import_tmx(self, path: Path, *, tenant: str = SHARED_TENANT, progress: ProgressFn | None = None,
                   transform: Callable[[str], str] | None = None) -> ImportReport:
        """One TMX file, all or nothing; raises TmxError (nothing committed) when the XML is malformed.
        `transform` rewrites every text before it is stored (PII redaction)."""
        opts = TmxOptions(tenant=tenant, max_entry_chars=self._config.max_entry_chars,
                          created_at=self._wall_clock().isoformat(), transform=transform)
        return import_tmx(self._store, path, opts, progress)

    def export_tmx(self, out: Path | TextIO, *, tenant: str | None = None, source_lang: str | None = None,
                   target_lang: str | None = None) -> int:
        """Stream matching entries as TMX 1.4; a Path is written to a temp file and renamed when complete."""
        sl = lang_key(source_lang) if source_lang else None
        entries = self.entries(tenant=tenant, source_lang=source_lang, target_lang=target_lang)
        if not isinstance(out, Path):
            return write_tmx(out, entries, srclang=sl or "*all*")
        tmp = out.with_name(out.name + ".part")
        with tmp.open("w", encoding="utf-8", newline="\n") as fh:
            written = write_tmx(fh, entries, srclang=sl or "*all*")
        os.replace(tmp, out)
        return written

    def entries(self, *, tenant: str | None = None, source_lang: str | None = None,
                target_lang: str | None = None) -> Iterator[TmEntry]:
        """Stream stored entries (id order), filtered by any of tenant / source / target language."""
        return self._store.iter_entries(tenant=tenant, source_lang=lang_key(source_lang) if source_lang else None,
                                        target_lang=lang_key(target_lang) if target_lang else None)

    def delete(self, tenant: str, source_lang: str, target_lang: str, source: str) -> bool:
        return self._store.delete(Scope(tenant, lang_key(source_lang), lang_key(target_lang)), source)

    def count(self, *, tenant: str | None = None, source_lang: str | None = None,
              target_lang: str | None = None) -> int:
        return self._store.count(tenant=tenant, source_lang=lang_key(source_lang) if source_lang else None,
                                 target_lang=lang_key(target_lang) if target_lang else None)

    def refresh(self) -> int:
        """See entries another process (the CLI's `tm import`) committed; cheap, call it after an import."""
        return self._store.refresh()

    def close(self) -> None:
        self._store.close()


def build_store(config: TmConfig, path: Path, clock: Clock | None = None) -> TmStore:
    match config.backend:
        case "sqlite":
            return SqliteTmStore(path, index=FuzzyIndex(max_candidates=config.max_candidates), clock=clock,
                                 scope_recheck_s=config.scope_recheck_s)
    raise ConfigError(f"unknown translation-memory backend {config.backend!r}")  # pragma: no cover


def build_memory(config: TmConfig, path: Path, *, wall_clock: WallClock = utc_now,
                 clock: Clock | None = None) -> TranslationMemory:
    """`path` as `Settings.store_path` resolved it; sqlite's ":memory:" for a private in-memory TM."""
    return TranslationMemory(build_store(config, path, clock), config, wall_clock=wall_clock)
