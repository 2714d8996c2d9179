"""The autoscaler's view of the shared queue: entries waiting per stream and the workers' heartbeats; and its
writes there, the warm pool's serve flags and the off-peak notice.

A stream holds exactly the work not yet done (workers delete what they finish), so the entries waiting for a
worker are its length less its pending entries (read by a worker, not yet answered): XLEN - XPENDING.
Every Redis failure becomes `QueueUnreachable`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.exceptions import ResponseError

from peakgate.errors import BadRequest
from peakgate.scaleout.cluster import Heartbeat, decode_beat
from peakgate.scaleout.keys import Keys
from peakgate.scaleout.redis_streams import RedisStreams, guarded, redis_client, unreachable
from peakgate.scaleout.settings import QueueConfig
from peakgate.scaleout.transport import QueueUnreachable

_log = logging.getLogger(__name__)
_T = TypeVar("_T")


class RedisControl:
    def __init__(self, client: aioredis.Redis, config: QueueConfig) -> None:
        self._client = client
        self._group = config.group
        self._keys = Keys(config.stream_prefix)
        self._retry_after_s = config.backoff_initial_s
        self._streams = RedisStreams(client, config, "autoscaler")  # heartbeats read as the gateways read them

    @classmethod
    def connect(cls, config: QueueConfig) -> RedisControl:
        return cls(redis_client(config), config)

    async def waiting(self, streams: Sequence[str]) -> dict[str, int]:
        """Entries no worker has taken yet, per stream (0 for a stream or group not there yet)."""
        pipe = self._client.pipeline(transaction=False)
        for stream in streams:
            pipe.xlen(stream)
            pipe.xpending(stream, self._group)
        results: list[Any] = await self._guard("XLEN/XPENDING", pipe.execute(raise_on_error=False))
        waiting: dict[str, int] = {}
        for stream, length, pending in zip(streams, results[::2], results[1::2], strict=True):
            for result in (length, pending):
                if isinstance(result, ResponseError) and "NOGROUP" not in str(result):
                    raise self._unreachable("XLEN/XPENDING", result)
            held = pending["pending"] if isinstance(pending, dict) else 0
            waiting[stream] = max(0, (length if isinstance(length, int) else 0) - held)
        return waiting

    async def heartbeats(self) -> list[Heartbeat]:
        """Every live worker's heartbeat (an unreadable one is logged and left out)."""
        beats: list[Heartbeat] = []
        for payload in await self._streams.heartbeats(self._keys.heartbeats):
            try:
                beats.append(decode_beat(payload))
            except BadRequest as exc:
                _log.warning("ignoring a worker heartbeat: %s", exc.message)
        return beats

    async def set_serving(self, worker: str, serving: bool) -> None:
        """Set (promote) or clear (stand by again) the serve flag of the standby worker `worker`."""
        key = self._keys.serve_flag(worker)
        if serving:
            await self._guard("SET", self._client.set(key, b"1"))
        else:
            await self._streams.forget(key)

    async def set_expiring(self, key: str, value: bytes, ttl_s: float) -> None:
        """SET `key` to `value`, gone after `ttl_s` (the off-peak notice: vouched for only while refreshed)."""
        await self._guard("SET", self._client.set(key, value, px=max(1, round(ttl_s * 1000))))

    async def close(self) -> None:
        await self._client.aclose()

    async def _guard(self, what: str, call: Awaitable[_T]) -> _T:
        return await guarded(what, call, self._retry_after_s)

    def _unreachable(self, what: str, exc: BaseException) -> QueueUnreachable:
        return unreachable(what, exc, self._retry_after_s)
