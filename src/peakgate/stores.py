"""The service's stateful parts, built once from `Settings`: cache, translation memory, glossaries, redactors.

Each store sits behind its room's protocol; the embedded default is in-process (L1 cache) and SQLite under
`data_dir` (or in memory when `data_dir` is None), Redis when `cache.backend = "redis"`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from peakgate.atrest import open_sealer
from peakgate.cache import CacheMetrics, TranslationCache, build_cache
from peakgate.clock import Clock
from peakgate.config import Settings
from peakgate.glossary import GlossaryResolver, GlossaryStore, build_glossary_store
from peakgate.jobs.store import JobStore, open_store
from peakgate.memory import TranslationMemory, build_memory
from peakgate.observe.metrics import Metrics
from peakgate.redaction.policy import TenantRedactors, build_redactors

_IN_MEMORY = Path(":memory:")  # sqlite3's name for a private in-memory database


@dataclass
class Stores:
    cache: TranslationCache
    memory: TranslationMemory | None
    glossaries: GlossaryStore
    resolver: GlossaryResolver
    redactors: TenantRedactors
    jobs: JobStore

    async def close(self) -> None:
        await self.cache.close()
        if self.memory is not None:
            self.memory.close()
        self.glossaries.close()
        self.jobs.close()


def open_stores(settings: Settings, clock: Clock, metrics: Metrics) -> Stores:
    cache = build_cache(settings.cache, clock, CacheMetrics(metrics.registry))
    memory = None
    if settings.tm.enabled:
        path = settings.store_path(settings.tm.path, "tm.sqlite3") or _IN_MEMORY
        memory = build_memory(settings.tm, path, clock=clock)
    glossary_path = settings.store_path(settings.glossary.path, "glossaries.sqlite3")
    kind = settings.glossary.store if glossary_path is not None else "memory"
    sealer = open_sealer(settings.at_rest, settings.data_dir)  # job and glossary text is sealed at rest
    glossaries = build_glossary_store(kind, glossary_path, sealer=sealer)
    jobs = open_store(settings.jobs, settings.store_path(settings.jobs.path, "jobs.sqlite3"), sealer=sealer)
    return Stores(cache, memory, glossaries, GlossaryResolver(glossaries), build_redactors(settings.redaction), jobs)
