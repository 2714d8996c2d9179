"""L1: an in-process LRU bounded by entries and bytes, with a TTL on the injected clock."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from peakgate.cache.metrics import CacheMetrics
from peakgate.clock import Clock

LAYER = "memory"


@dataclass(slots=True)
class _Entry:
    value: str
    expires_at: float
    size: int


def entry_size(key: str, value: str) -> int:
    """What an entry counts against `max_bytes`: the UTF-8 length of key and value."""
    return len(key.encode()) + len(value.encode())


class MemoryCache:
    """Least-recently-used first out; an expired entry is dropped when it is next touched or reaches the tail."""

    def __init__(
        self, *, max_entries: int, max_bytes: int, ttl_s: float, clock: Clock, metrics: CacheMetrics
    ) -> None:
        self._max_entries = max_entries
        self._max_bytes = max_bytes
        self._ttl_s = ttl_s
        self._clock = clock
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0
        self._hits = metrics.hits.labels(LAYER)
        self._misses = metrics.misses.labels(LAYER)
        self._evicted_size = metrics.evictions.labels(LAYER, "size")
        self._evicted_ttl = metrics.evictions.labels(LAYER, "ttl")

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return self._bytes

    def get_many(self, keys: Sequence[str]) -> list[str | None]:
        now = self._clock.now()
        out: list[str | None] = []
        for key in keys:
            entry = self._entries.get(key)
            if entry is not None and entry.expires_at <= now:
                self._remove(key, entry)
                self._evicted_ttl.inc()
                entry = None
            if entry is None:
                self._misses.inc()
                out.append(None)
                continue
            self._entries.move_to_end(key)
            self._hits.inc()
            out.append(entry.value)
        return out

    def set_many(self, items: Mapping[str, str]) -> None:
        expires_at = self._clock.now() + self._ttl_s
        for key, value in items.items():
            old = self._entries.get(key)
            if old is not None:
                self._remove(key, old)
            entry = _Entry(value, expires_at, entry_size(key, value))
            if entry.size > self._max_bytes:
                self._evicted_size.inc()  # could never fit; dropped unread like any size eviction
                continue
            self._entries[key] = entry
            self._bytes += entry.size
        self._shrink()

    def clear(self) -> None:
        self._entries.clear()
        self._bytes = 0

    def _shrink(self) -> None:
        now = self._clock.now()
        while len(self._entries) > self._max_entries or self._bytes > self._max_bytes:
            key, entry = next(iter(self._entries.items()))
            self._remove(key, entry)
            # An already-expired victim was lost to its TTL, not to the bound.
            (self._evicted_ttl if entry.expires_at <= now else self._evicted_size).inc()

    def _remove(self, key: str, entry: _Entry) -> None:
        del self._entries[key]
        self._bytes -= entry.size
