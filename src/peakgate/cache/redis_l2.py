"""L2: a shared Redis behind L1. Best effort: a failing Redis costs hits, never requests.

Every failure is counted and served as a miss (reads) or skipped (writes), and opens an exponential backoff
on the injected clock during which Redis is not even tried, so a dead Redis adds no latency to the request
path. The first call that succeeds after the backoff closes it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

from peakgate.cache.metrics import CacheMetrics
from peakgate.cache.settings import CacheConfig
from peakgate.clock import Clock
from peakgate.errors import ConfigError, Unavailable

LAYER = "redis"
_T = TypeVar("_T")


class Backoff:
    """Exponential backoff on a clock: `initial_s`, doubling per consecutive failure, capped at `max_s`."""

    def __init__(self, clock: Clock, initial_s: float, max_s: float) -> None:
        self._clock = clock
        self._initial_s = initial_s
        self._max_s = max(max_s, initial_s)
        self._failures = 0
        self._retry_at = 0.0

    @property
    def failures(self) -> int:
        return self._failures

    def ready(self) -> bool:
        return self._clock.now() >= self._retry_at

    def failed(self) -> float:
        """Record a failure; returns the delay before the next try."""
        delay = min(self._initial_s * 2.0 ** min(self._failures, 60), self._max_s)
        self._failures += 1
        self._retry_at = self._clock.now() + delay
        return delay

    def succeeded(self) -> None:
        self._failures = 0
        self._retry_at = 0.0


def error_kind(exc: BaseException) -> str:
    """The `kind` label for a failure (the cause of the `Unavailable` it was mapped to)."""
    cause = exc.__cause__ or exc
    if isinstance(cause, RedisTimeoutError | asyncio.TimeoutError | TimeoutError):
        return "timeout"
    if isinstance(cause, RedisConnectionError | OSError):
        return "connection"
    return "redis"


class RedisCache:
    """`get_many` is one MGET, `set_many` one pipeline of SET EX; neither raises for a Redis failure."""

    layer = LAYER

    def __init__(
        self, client: aioredis.Redis, *, prefix: str, ttl_s: float, backoff: Backoff, metrics: CacheMetrics
    ) -> None:
        self._client = client
        self._prefix = prefix
        self._ttl_s = max(1, round(ttl_s))  # SET EX takes whole seconds
        self._backoff = backoff
        self._metrics = metrics
        self._hits = metrics.hits.labels(LAYER)
        self._misses = metrics.misses.labels(LAYER)

    @classmethod
    def from_config(cls, config: CacheConfig, clock: Clock, metrics: CacheMetrics) -> RedisCache:
        timeout = config.redis_socket_timeout_s
        # No client-side retries: one failure should open our backoff, not stall the request on retries.
        try:
            client = aioredis.Redis.from_url(
                config.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout, retry=Retry(NoBackoff(), 0)
            )
        except ValueError as exc:
            raise ConfigError(f"cache.redis_url is not a Redis URL: {exc}") from exc
        backoff = Backoff(clock, config.redis_backoff_initial_s, config.redis_backoff_max_s)
        return cls(client, prefix=config.redis_key_prefix, ttl_s=config.ttl_s, backoff=backoff, metrics=metrics)

    @property
    def backoff(self) -> Backoff:
        return self._backoff

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        if not keys:
            return []
        values = await self._guarded(lambda: self._mget(keys))
        out: list[str | None] = values if values is not None else [None] * len(keys)
        hits = sum(1 for v in out if v is not None)
        self._hits.inc(hits)
        self._misses.inc(len(out) - hits)
        return out

    async def set_many(self, items: Mapping[str, str]) -> None:
        if items:
            await self._guarded(lambda: self._set(items))

    async def close(self) -> None:
        await self._client.aclose()

    async def _guarded(self, call: Callable[[], Awaitable[_T]]) -> _T | None:
        if not self._backoff.ready():
            return None
        try:
            result = await call()
        except Unavailable as exc:
            self._metrics.errors.labels(LAYER, error_kind(exc)).inc()
            self._backoff.failed()
            return None
        self._backoff.succeeded()
        return result

    async def _mget(self, keys: Sequence[str]) -> list[str | None]:
        try:
            raw: list[bytes | str | None] = await self._client.mget([self._prefix + k for k in keys])
        except (RedisError, OSError, TimeoutError) as exc:
            raise Unavailable(f"redis MGET of {len(keys)} keys failed: {exc!r}") from exc
        return [self._decode(v) for v in raw]

    def _decode(self, value: bytes | str | None) -> str | None:
        if value is None or isinstance(value, str):
            return value
        try:
            return value.decode()
        except UnicodeDecodeError:
            self._metrics.errors.labels(LAYER, "decode").inc()  # someone else's value under our prefix
            return None

    async def _set(self, items: Mapping[str, str]) -> None:
        try:
            async with self._client.pipeline(transaction=False) as pipe:
                for key, value in items.items():
                    pipe.set(self._prefix + key, value.encode(), ex=self._ttl_s)
                await pipe.execute()
        except (RedisError, OSError, TimeoutError) as exc:
            raise Unavailable(f"redis SET of {len(items)} keys failed: {exc!r}") from exc
