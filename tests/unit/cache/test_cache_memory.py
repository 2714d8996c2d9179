"""L1: LRU order, entry and byte bounds, TTL on a FakeClock, and the counters it keeps."""

from __future__ import annotations

from prometheus_client import CollectorRegistry

from peakgate.cache.memory import MemoryCache, entry_size
from peakgate.cache.metrics import CacheMetrics
from peakgate.clock import FakeClock


def make(
    *, max_entries: int = 100, max_bytes: int = 10_000, ttl_s: float = 60.0
) -> tuple[MemoryCache, FakeClock, CollectorRegistry]:
    registry = CollectorRegistry()
    clock = FakeClock()
    cache = MemoryCache(
        max_entries=max_entries, max_bytes=max_bytes, ttl_s=ttl_s, clock=clock, metrics=CacheMetrics(registry)
    )
    return cache, clock, registry


def sample(registry: CollectorRegistry, name: str, **labels: str) -> float:
    return registry.get_sample_value(name, {"layer": "memory", **labels}) or 0.0


def test_round_trip_and_hit_miss_counters() -> None:
    cache, _, registry = make()
    cache.set_many({"a": "uno", "b": "dos"})
    assert cache.get_many(["a", "x", "b"]) == ["uno", None, "dos"]
    assert sample(registry, "peakgate_cache_hits_total") == 2
    assert sample(registry, "peakgate_cache_misses_total") == 1


def test_entry_bound_evicts_least_recently_used() -> None:
    cache, _, registry = make(max_entries=2)
    cache.set_many({"a": "1", "b": "2"})
    cache.get_many(["a"])  # b is now the least recently used
    cache.set_many({"c": "3"})
    assert cache.get_many(["a", "b", "c"]) == ["1", None, "3"]
    assert sample(registry, "peakgate_cache_evictions_total", reason="size") == 1


def test_byte_bound_counts_utf8_of_key_and_value() -> None:
    assert entry_size("k", "ñ") == 3
    cache, _, _ = make(max_bytes=entry_size("a", "ñañ") + entry_size("b", "ñañ"))
    cache.set_many({"a": "ñañ", "b": "ñañ"})
    assert cache.bytes == 12
    cache.set_many({"c": "x"})
    assert cache.get_many(["a", "b", "c"]) == [None, "ñañ", "x"]
    assert cache.bytes == entry_size("b", "ñañ") + entry_size("c", "x")


def test_an_entry_larger_than_the_whole_budget_is_dropped() -> None:
    cache, _, registry = make(max_bytes=5)
    cache.set_many({"k": "too long"})
    assert len(cache) == 0
    assert cache.bytes == 0
    assert sample(registry, "peakgate_cache_evictions_total", reason="size") == 1


def test_overwrite_replaces_the_size() -> None:
    cache, _, _ = make()
    cache.set_many({"k": "long value"})
    cache.set_many({"k": "v"})
    assert cache.bytes == entry_size("k", "v")
    assert len(cache) == 1


def test_ttl_expires_on_the_clock() -> None:
    cache, clock, registry = make(ttl_s=10)
    cache.set_many({"k": "v"})
    clock.advance(9.9)
    assert cache.get_many(["k"]) == ["v"]  # reading does not extend the TTL
    clock.advance(0.1)
    assert cache.get_many(["k"]) == [None]
    assert len(cache) == 0
    assert sample(registry, "peakgate_cache_evictions_total", reason="ttl") == 1


def test_expired_victim_is_counted_as_ttl_not_size() -> None:
    cache, clock, registry = make(max_entries=1, ttl_s=10)
    cache.set_many({"old": "v"})
    clock.advance(11)
    cache.set_many({"new": "v"})
    assert sample(registry, "peakgate_cache_evictions_total", reason="ttl") == 1
    assert sample(registry, "peakgate_cache_evictions_total", reason="size") == 0


def test_clear() -> None:
    cache, _, _ = make()
    cache.set_many({"k": "v"})
    cache.clear()
    assert (len(cache), cache.bytes) == (0, 0)
