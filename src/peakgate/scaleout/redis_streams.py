"""Both queue transports on a real Redis: streams, one consumer group per stream, heartbeat keys with a TTL.

- enqueue: XADD (pipelined, several entries per round trip);
- read: XREADGROUP `>` stream by stream in the order given, inside one Lua script, until `count` entries:
  a worker takes the more critical classes first and never more than it has room for, in one round trip;
- wait: a blocking XREADGROUP over every stream, COUNT 1 (it only wakes the reader);
- reclaim: XAUTOCLAIM; touch: XCLAIM JUSTID with no idle minimum (resets the idle time of what is held);
- finish: one pipeline, in order: XADD of each gateway's replies (MAXLEN ~) with a PEXPIRE of its stream,
  then XACK and XDEL of the entries per stream. Not a transaction: cut short, a prefix ran, so an entry may be
  answered and still pending (it runs again; the gateway drops the second answer), never acknowledged
  unanswered. Finished entries leave the stream, so a stream holds exactly the work not yet done;
- a stream whose group is gone (Redis restarted empty) gets it back on the next read.
- flag: EXISTS of a standby worker's serve flag (set and cleared by the autoscaler).

Every Redis failure becomes `QueueUnreachable`; the client never retries by itself (one failure should
reach the caller's backoff at once) and every call has `socket_timeout_ms`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Mapping, Sequence
from typing import Any, TypeVar

import redis.asyncio as aioredis
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import RedisError, ResponseError

from peakgate.errors import ConfigError
from peakgate.scaleout.settings import QueueConfig
from peakgate.scaleout.transport import Delivery, Outbound, QueueUnreachable

_FIELD = b"m"
_T = TypeVar("_T")
# KEYS: streams, most critical first; ARGV: group, consumer, count. Returns XREADGROUP's reply shape.
_READ_IN_ORDER = """
local out = {}
local left = tonumber(ARGV[3])
for _, stream in ipairs(KEYS) do
  if left <= 0 then break end
  local got = redis.call('XREADGROUP', 'GROUP', ARGV[1], ARGV[2], 'COUNT', left, 'STREAMS', stream, '>')
  if got then
    left = left - #got[1][2]
    table.insert(out, got[1])
  end
end
return out
"""


class RedisStreams:
    """Implements `WorkerTransport` and `GatewayTransport` as consumer `consumer` of group `group`."""

    def __init__(self, client: aioredis.Redis, config: QueueConfig, consumer: str) -> None:
        self._client = client
        self._group = config.group
        self._consumer = consumer
        self._reply_max_len = config.reply_max_len
        self._reply_ttl_ms = round(config.reply_ttl_s * 1000)
        self._retry_after_s = config.backoff_initial_s
        self._read_in_order = client.register_script(_READ_IN_ORDER)

    @classmethod
    def connect(cls, config: QueueConfig, consumer: str) -> RedisStreams:
        return cls(redis_client(config), config, consumer)

    async def ensure_groups(self, streams: Sequence[str]) -> None:
        for stream in streams:
            try:
                await self._client.xgroup_create(stream, self._group, id="0", mkstream=True)
            except ResponseError as exc:
                if "BUSYGROUP" not in str(exc):
                    raise self._unreachable("XGROUP CREATE", exc) from exc
            except (RedisError, OSError) as exc:
                raise self._unreachable("XGROUP CREATE", exc) from exc

    async def read(self, streams: Sequence[str], count: int) -> list[Delivery]:
        found = await self._grouped(streams, "XREADGROUP", self._read_in_order(
            keys=list(streams), args=[self._group, self._consumer, count]))
        return [_delivery(stream, entry) for stream, entries in found or () for entry in entries]

    async def wait(self, streams: Sequence[str], block_ms: int) -> list[Delivery]:
        found = await self._grouped(streams, "XREADGROUP BLOCK", self._client.xreadgroup(
            self._group, self._consumer, dict.fromkeys(streams, ">"), count=1, block=block_ms))
        return [_delivery(stream, entry) for stream, entries in found or () for entry in entries]

    async def _grouped(self, streams: Sequence[str], what: str, call: Awaitable[Any]) -> Any:
        """A group read; a group gone (Redis lost its data: a restart) is made again and the read is empty."""
        try:
            return await call
        except ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise self._unreachable(what, exc) from exc
        except (RedisError, OSError) as exc:
            raise self._unreachable(what, exc) from exc
        await self.ensure_groups(streams)
        return []

    async def reclaim(self, stream: str, min_idle_ms: int, count: int) -> list[Delivery]:
        # Entries deleted meanwhile come back in a third list and leave the pending list: nothing to do.
        response: Any = await self._guard("XAUTOCLAIM", self._client.xautoclaim(
            stream, self._group, self._consumer, min_idle_ms, start_id="0-0", count=count))
        return [_delivery(stream, entry) for entry in response[1] if entry[0] is not None]

    async def touch(self, stream: str, entry_ids: Sequence[str]) -> None:
        if entry_ids:
            await self._guard("XCLAIM", self._client.xclaim(
                stream, self._group, self._consumer, 0, list(entry_ids), justid=True))

    async def finish(self, replies: Sequence[Outbound], done: Mapping[str, Sequence[str]]) -> None:
        pipe = self._client.pipeline(transaction=False)
        for reply in replies:
            pipe.xadd(reply.stream, {_FIELD: reply.payload}, maxlen=self._reply_max_len, approximate=True)
        for stream in {reply.stream for reply in replies}:
            pipe.pexpire(stream, self._reply_ttl_ms)
        for stream, ids in done.items():
            pipe.xack(stream, self._group, *ids)
            pipe.xdel(stream, *ids)
        await self._guard("pipeline", pipe.execute())

    async def beat(self, key: str, payload: bytes, ttl_ms: int) -> None:
        await self._guard("SET", self._client.set(key, payload, px=ttl_ms))

    async def flag(self, key: str) -> bool:
        return bool(await self._guard("EXISTS", self._client.exists(key)))

    async def forget(self, key: str) -> None:
        await self._guard("DEL", self._client.delete(key))

    async def enqueue(self, entries: Sequence[Outbound]) -> None:
        pipe = self._client.pipeline(transaction=False)
        for entry in entries:
            pipe.xadd(entry.stream, {_FIELD: entry.payload})
        await self._guard("XADD", pipe.execute())

    async def replies(self, stream: str, after: str, count: int, block_ms: int) -> tuple[str, list[bytes]]:
        found: Any = await self._guard("XREAD", self._client.xread({stream: after}, count=count, block=block_ms))
        payloads: list[bytes] = []
        for _, entries in found or ():
            for entry_id, fields in entries:
                after = _text(entry_id)
                payloads.append(fields.get(_FIELD, b""))
        return after, payloads

    async def heartbeats(self, pattern: str) -> list[bytes]:
        try:
            keys = [key async for key in self._client.scan_iter(match=pattern, count=500)]
            values: Any = await self._client.mget(keys) if keys else []
        except (RedisError, OSError) as exc:
            raise self._unreachable("SCAN/MGET", exc) from exc
        return [value for value in values if value is not None]  # expired between SCAN and MGET

    async def close(self) -> None:
        await self._client.aclose()

    async def _guard(self, what: str, call: Awaitable[_T]) -> _T:
        return await guarded(what, call, self._retry_after_s)

    def _unreachable(self, what: str, exc: BaseException) -> QueueUnreachable:
        return unreachable(what, exc, self._retry_after_s)


def unreachable(what: str, exc: BaseException, retry_after_s: float) -> QueueUnreachable:
    """A Redis failure as the queue's error: callers answer 503 + Retry-After, never hang."""
    return QueueUnreachable(f"work queue unreachable ({what}: {exc}); retry shortly", retry_after_s=retry_after_s)


async def guarded(what: str, call: Awaitable[_T], retry_after_s: float) -> _T:
    """Await a Redis call, mapping its failures to `QueueUnreachable`."""
    try:
        return await call
    except (RedisError, OSError) as exc:
        raise unreachable(what, exc, retry_after_s) from exc


def redis_client(config: QueueConfig) -> aioredis.Redis:
    """A client for `config.redis_url` (connections open lazily: an unreachable Redis fails the first call)."""
    timeout = config.socket_timeout_ms / 1000.0
    try:
        return aioredis.Redis.from_url(config.redis_url, socket_timeout=timeout, socket_connect_timeout=timeout,
                                       retry=Retry(NoBackoff(), 0))
    except ValueError as exc:
        raise ConfigError(f"queue.redis_url is not a Redis URL: {exc}") from exc


def _delivery(stream: Any, entry: Sequence[Any]) -> Delivery:
    entry_id, fields = entry
    if isinstance(fields, list):  # from the script: the flat [field, value, ...] list, not redis-py's dict
        fields = dict(zip(fields[::2], fields[1::2], strict=True))
    return Delivery(_text(stream), _text(entry_id), (fields or {}).get(_FIELD))


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
