"""The Redis L2 against a real redis-server: TTLs, one-round-trip batches, sharing, and surviving an outage."""

from __future__ import annotations

import asyncio

from prometheus_client import CollectorRegistry
from redis_harness import RedisServer

from peakgate.cache.keys import CacheKey, KeyParts, cache_key
from peakgate.cache.layered import TranslationCache, build_cache
from peakgate.cache.metrics import CacheMetrics
from peakgate.cache.redis_l2 import RedisCache
from peakgate.cache.settings import CacheConfig
from peakgate.clock import MonotonicClock

PREFIX = "test:tc:"
PARTS = KeyParts(source="en", target="es", model="fast")


def config(server: RedisServer, **overrides: object) -> CacheConfig:
    base: dict[str, object] = {
        "backend": "redis",
        "redis_url": server.url,
        "redis_key_prefix": PREFIX,
        "ttl_s": 120.0,
        "redis_socket_timeout_s": 0.5,
        "redis_backoff_initial_s": 0.05,
        "redis_backoff_max_s": 0.2,
    }
    return CacheConfig.model_validate({**base, **overrides})


def keys(cfg: CacheConfig, *texts: str) -> list[CacheKey]:
    return [cache_key(t, PARTS, cfg) for t in texts]


_LEET = str.maketrans("aeoAEO", "430430")


def translate(text: str) -> str:
    """A stand-in engine that keeps casing and final marks, as a real one would."""
    return text.translate(_LEET)


class Engine:
    def __init__(self, texts: list[str]) -> None:
        self.texts = texts
        self.calls: list[list[int]] = []

    async def __call__(self, indices: list[int]) -> list[str]:
        self.calls.append(indices)
        return [translate(self.texts[i]) for i in indices]


def errors(registry: CollectorRegistry, kind: str) -> float:
    return registry.get_sample_value("peakgate_cache_errors_total", {"layer": "redis", "kind": kind}) or 0.0


async def test_round_trip_sets_the_ttl(redis_server: RedisServer) -> None:
    l2 = RedisCache.from_config(config(redis_server), MonotonicClock(), CacheMetrics(CollectorRegistry()))
    try:
        await l2.set_many({"a": "uno", "b": "dós"})
        assert await l2.get_many(["a", "missing", "b"]) == ["uno", None, "dós"]
    finally:
        await l2.close()
    with redis_server.client() as raw:
        assert 115 <= raw.ttl(PREFIX + "a") <= 120
        assert raw.get(PREFIX + "b") == "dós".encode()


async def test_a_batch_is_one_mget_and_one_pipeline(redis_server: RedisServer) -> None:
    l2 = RedisCache.from_config(config(redis_server), MonotonicClock(), CacheMetrics(CollectorRegistry()))
    batch = {f"k{i}": f"v{i}" for i in range(50)}
    with redis_server.client() as raw:
        raw.config_resetstat()
        try:
            await l2.set_many(batch)
            assert await l2.get_many(list(batch)) == list(batch.values())
        finally:
            await l2.close()
        stats = raw.info("commandstats")
    assert stats["cmdstat_mget"]["calls"] == 1
    assert stats["cmdstat_set"]["calls"] == 50
    assert "cmdstat_get" not in stats


async def test_two_instances_share_l2_and_the_second_backfills_its_l1(redis_server: RedisServer) -> None:
    cfg = config(redis_server)
    first = build_cache(cfg, MonotonicClock(), CacheMetrics(CollectorRegistry()))
    second_registry = CollectorRegistry()
    second = build_cache(cfg, MonotonicClock(), CacheMetrics(second_registry))
    try:
        entries = keys(cfg, "Hello world.", "cat")
        assert await first.get_or_fill(entries, Engine(["Hello world.", "cat"])) == ["H3ll0 w0rld.", "c4t"]
        engine = Engine(["hello world", "cat"])
        assert await second.get_or_fill(keys(cfg, "hello world", "cat"), engine) == ["h3ll0 w0rld", "c4t"]
        assert engine.calls == []
        assert second_registry.get_sample_value("peakgate_cache_hits_total", {"layer": "redis"}) == 2
        assert second.l1.get_many([e.key for e in entries]) == ["h3ll0 w0rld", "c4t"]
    finally:
        await first.close()
        await second.close()


async def test_outage_is_served_from_l1_and_fill_then_recovers(redis_server: RedisServer) -> None:
    cfg = config(redis_server)
    registry = CollectorRegistry()
    cache = build_cache(cfg, MonotonicClock(), CacheMetrics(registry))
    try:
        await outage_then_recovery(cache, cfg, registry, redis_server)
    finally:
        await cache.close()


async def outage_then_recovery(
    cache: TranslationCache, cfg: CacheConfig, registry: CollectorRegistry, server: RedisServer
) -> None:
    assert isinstance(cache.l2, RedisCache)
    assert await cache.get_or_fill(keys(cfg, "cat"), Engine(["cat"])) == ["c4t"]
    server.stop()

    engine = Engine(["cat", "dog"])
    assert await cache.get_or_fill(keys(cfg, "cat", "dog"), engine) == ["c4t", "d0g"]
    assert engine.calls == [[1]]  # "cat" from L1; "dog" filled although Redis is gone
    failed = errors(registry, "connection")
    assert failed == 1  # the lookup failed; the write was skipped by the backoff it opened
    assert not cache.l2.backoff.ready()
    assert await cache.get_or_fill(keys(cfg, "bird"), Engine(["bird"])) == ["bird"]
    assert errors(registry, "connection") == failed  # backing off: Redis not even tried

    server.start()
    await asyncio.sleep(0.25)  # past the longest backoff
    assert await cache.get_or_fill(keys(cfg, "fish"), Engine(["fish"])) == ["fish"]
    assert cache.l2.backoff.failures == 0
    with server.client() as raw:
        assert raw.get(PREFIX + keys(cfg, "fish")[0].key) == b"fish"


async def test_a_hung_redis_times_out_into_a_miss() -> None:
    async def never_answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # swallow the commands, answer nothing, until the client hangs up
        writer.close()

    hung = await asyncio.start_server(never_answer, "127.0.0.1", 0)
    port = hung.sockets[0].getsockname()[1]
    cfg = CacheConfig(backend="redis", redis_url=f"redis://127.0.0.1:{port}/0", redis_socket_timeout_s=0.05)
    registry = CollectorRegistry()
    l2 = RedisCache.from_config(cfg, MonotonicClock(), CacheMetrics(registry))
    try:
        async with asyncio.timeout(2):
            assert await l2.get_many(["k"]) == [None]
        assert errors(registry, "timeout") == 1
        assert not l2.backoff.ready()
    finally:
        await l2.close()
        hung.close()
        await hung.wait_closed()
