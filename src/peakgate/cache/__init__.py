"""Layered translation cache: normalized keys, an in-process L1, an optional shared Redis L2, single-flight."""

from __future__ import annotations

from peakgate.cache.keys import CacheKey, Casing, KeyParts, Shape, cache_key
from peakgate.cache.layered import L2Store, TranslationCache, build_cache
from peakgate.cache.memory import MemoryCache
from peakgate.cache.metrics import CacheMetrics
from peakgate.cache.settings import CacheConfig

__all__ = [
    "CacheConfig",
    "CacheKey",
    "CacheMetrics",
    "Casing",
    "KeyParts",
    "L2Store",
    "MemoryCache",
    "Shape",
    "TranslationCache",
    "build_cache",
    "cache_key",
]
