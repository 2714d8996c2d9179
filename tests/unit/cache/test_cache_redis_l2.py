"""RedisCache logic over a fake client: failures counted and served as misses, backoff on a FakeClock."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from prometheus_client import CollectorRegistry
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError

from peakgate.cache.metrics import CacheMetrics
from peakgate.cache.redis_l2 import Backoff, RedisCache, error_kind
from peakgate.cache.settings import CacheConfig
from peakgate.clock import FakeClock
from peakgate.errors import ConfigError, Unavailable


class FakePipeline:
    def __init__(self, client: FakeClient) -> None:
        self.client = client
        self.ops: list[tuple[str, bytes, int]] = []

    async def __aenter__(self) -> FakePipeline:
        return self

    async def __aexit__(self, *exc: object) -> None:
        return None

    def set(self, key: str, value: bytes, ex: int) -> None:
        self.ops.append((key, value, ex))

    async def execute(self) -> None:
        self.client.calls += 1
        if self.client.error is not None:
            raise self.client.error
        for key, value, ex in self.ops:
            self.client.data[key] = value
            self.client.ttls[key] = ex


class FakeClient:
    def __init__(self) -> None:
        self.data: dict[str, bytes] = {}
        self.ttls: dict[str, int] = {}
        self.error: Exception | None = None
        self.calls = 0
        self.closed = False

    async def mget(self, keys: Sequence[str]) -> list[bytes | None]:
        self.calls += 1
        if self.error is not None:
            raise self.error
        return [self.data.get(k) for k in keys]

    def pipeline(self, transaction: bool = True) -> FakePipeline:
        return FakePipeline(self)

    async def aclose(self) -> None:
        self.closed = True


def make() -> tuple[RedisCache, FakeClient, FakeClock, CollectorRegistry]:
    registry = CollectorRegistry()
    clock = FakeClock()
    client = FakeClient()
    client_any: Any = client
    cache = RedisCache(client_any, prefix="p:", ttl_s=90.4, backoff=Backoff(clock, 1.0, 4.0),
                       metrics=CacheMetrics(registry))
    return cache, client, clock, registry


def errors(registry: CollectorRegistry, kind: str) -> float:
    return registry.get_sample_value("peakgate_cache_errors_total", {"layer": "redis", "kind": kind}) or 0.0


async def test_round_trip_uses_the_prefix_and_whole_second_ttl() -> None:
    cache, client, _, registry = make()
    await cache.set_many({"a": "uno", "b": "dós"})
    assert client.data == {"p:a": b"uno", "p:b": "dós".encode()}
    assert client.ttls == {"p:a": 90, "p:b": 90}
    assert await cache.get_many(["a", "x", "b"]) == ["uno", None, "dós"]
    assert registry.get_sample_value("peakgate_cache_hits_total", {"layer": "redis"}) == 2
    assert registry.get_sample_value("peakgate_cache_misses_total", {"layer": "redis"}) == 1


async def test_empty_calls_do_not_touch_redis() -> None:
    cache, client, _, _ = make()
    assert await cache.get_many([]) == []
    await cache.set_many({})
    assert client.calls == 0


async def test_failure_is_a_miss_then_backoff_skips_redis_until_it_expires() -> None:
    cache, client, clock, registry = make()
    client.data["p:k"] = b"v"
    client.error = RedisConnectionError("refused")
    assert await cache.get_many(["k"]) == [None]
    assert errors(registry, "connection") == 1
    client.error = None
    clock.advance(0.9)
    assert await cache.get_many(["k"]) == [None]  # still backing off: not even tried
    await cache.set_many({"x": "y"})
    assert client.calls == 1
    clock.advance(0.1)
    assert await cache.get_many(["k"]) == ["v"]
    assert cache.backoff.failures == 0


async def test_backoff_doubles_up_to_the_cap_and_success_resets_it() -> None:
    cache, client, clock, registry = make()
    client.error = RedisTimeoutError("slow")
    delays = []
    for _ in range(4):
        before = client.calls
        await cache.get_many(["k"])
        assert client.calls == before + 1
        start = clock.now()
        while not cache.backoff.ready():
            clock.advance(0.5)
        delays.append(clock.now() - start)
    assert delays == [1.0, 2.0, 4.0, 4.0]
    assert errors(registry, "timeout") == 4
    client.error = None
    await cache.set_many({"k": "v"})
    assert cache.backoff.failures == 0
    assert cache.backoff.ready()


async def test_other_redis_errors_and_bad_bytes_are_counted() -> None:
    cache, client, clock, registry = make()
    client.error = ResponseError("WRONGTYPE")
    await cache.set_many({"k": "v"})
    assert errors(registry, "redis") == 1
    clock.advance(1)
    client.error = None
    client.data["p:bad"] = b"\xff\xfe"
    assert await cache.get_many(["bad"]) == [None]
    assert errors(registry, "decode") == 1


def test_error_kind_reads_the_mapped_cause() -> None:
    def mapped(cause: Exception) -> Unavailable:
        exc = Unavailable("x")
        exc.__cause__ = cause
        return exc

    assert error_kind(mapped(RedisTimeoutError())) == "timeout"
    assert error_kind(mapped(TimeoutError())) == "timeout"
    assert error_kind(mapped(ConnectionRefusedError())) == "connection"
    assert error_kind(mapped(ResponseError())) == "redis"


async def test_close_closes_the_client() -> None:
    cache, client, _, _ = make()
    await cache.close()
    assert client.closed


def test_a_malformed_url_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="redis_url"):
        RedisCache.from_config(CacheConfig(redis_url="memcached://x"), FakeClock(), CacheMetrics(CollectorRegistry()))
