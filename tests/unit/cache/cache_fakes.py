"""Fakes shared by the cache unit tests: an in-memory L2 that can fail, and a TranslationCache builder."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence

from prometheus_client import CollectorRegistry

from peakgate.cache.keys import CacheKey, KeyParts, cache_key
from peakgate.cache.layered import TranslationCache
from peakgate.cache.memory import MemoryCache
from peakgate.cache.metrics import CacheMetrics
from peakgate.cache.settings import CacheConfig
from peakgate.clock import FakeClock
from peakgate.errors import Unavailable

PARTS = KeyParts(source="en", target="es", model="fast")
CONFIG = CacheConfig()


class FakeL2:
    """A dict with call logs; `fail` makes every call raise (a contract breach the facade must absorb)."""

    layer = "redis"

    def __init__(self) -> None:
        self.data: dict[str, str] = {}
        self.gets: list[list[str]] = []
        self.sets: list[dict[str, str]] = []
        self.fail = False
        self.gate: asyncio.Event | None = None  # when set, get_many parks until it is released
        self.closed = False

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        self.gets.append(list(keys))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail:
            raise Unavailable("fake redis down")
        return [self.data.get(k) for k in keys]

    async def set_many(self, items: Mapping[str, str]) -> None:
        self.sets.append(dict(items))
        if self.fail:
            raise Unavailable("fake redis down")
        self.data.update(items)

    async def close(self) -> None:
        self.closed = True


class Harness:
    def __init__(self, *, l2: FakeL2 | None = None, max_entries: int = 1000) -> None:
        self.registry = CollectorRegistry()
        self.metrics = CacheMetrics(self.registry)
        self.clock = FakeClock()
        self.l1 = MemoryCache(max_entries=max_entries, max_bytes=1 << 20, ttl_s=60, clock=self.clock,
                              metrics=self.metrics)
        self.l2 = l2
        self.cache = TranslationCache(self.l1, l2, self.metrics)

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.registry.get_sample_value(name, labels or {}) or 0.0


def keys(*texts: str) -> list[CacheKey]:
    return [cache_key(t, PARTS, CONFIG) for t in texts]
