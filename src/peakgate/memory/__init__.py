"""Translation memory: exact and fuzzy reuse of past translations, one-span repair, TMX import/export."""

from peakgate.memory.entry import AddResult, Origin, TmEntry, TmMatch
from peakgate.memory.repair import TranslateFn
from peakgate.memory.settings import TmConfig
from peakgate.memory.store import Scope, TmStore, TmStoreError
from peakgate.memory.tm import TmResult, TranslationMemory, build_memory
from peakgate.memory.tmx import ImportProgress, ImportReport, TmxError

__all__ = [
    "AddResult",
    "ImportProgress",
    "ImportReport",
    "Origin",
    "Scope",
    "TmConfig",
    "TmEntry",
    "TmMatch",
    "TmResult",
    "TmStore",
    "TmStoreError",
    "TmxError",
    "TranslateFn",
    "TranslationMemory",
    "build_memory",
]
