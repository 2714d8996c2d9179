"""What gateways and workers need from the shared queue, as two small protocols over Redis Streams commands.

`redis_streams.RedisStreams` implements both on a real Redis; the unit tests implement them in memory. Every
method raises `QueueUnreachable` when the queue cannot be reached (never hangs: each call has a timeout).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from peakgate.errors import Unavailable


class QueueUnreachable(Unavailable):
    """The shared queue (Redis) is down or too slow: 503 + Retry-After, or the local fallback."""


@dataclass(frozen=True, slots=True)
class Delivery:
    """A work entry handed to this worker (read or reclaimed); it stays pending until finished."""

    stream: str
    entry_id: str
    payload: bytes | None  # None: the entry has no payload field at all


@dataclass(frozen=True, slots=True)
class Outbound:
    """A message to append to a stream."""

    stream: str
    payload: bytes


class WorkerTransport(Protocol):
    async def ensure_groups(self, streams: Sequence[str]) -> None:
        """Create the consumer group of each stream (and the stream) unless it exists."""

    async def read(self, streams: Sequence[str], count: int) -> list[Delivery]:
        """New entries, at most `count` in all, taken from the streams in the order given: a later stream is
        read only when the earlier ones had fewer than asked. Never waits."""
        ...

    async def wait(self, streams: Sequence[str], block_ms: int) -> list[Delivery]:
        """Block up to `block_ms` for new entries; takes at most one per stream (a wake-up, not a read)."""
        ...

    async def reclaim(self, stream: str, min_idle_ms: int, count: int) -> list[Delivery]:
        """Take over entries another consumer left pending for `min_idle_ms` or more."""
        ...

    async def touch(self, stream: str, entry_ids: Sequence[str]) -> None:
        """Reset the idle time of entries this worker holds, so nobody reclaims them while it works."""

    async def finish(self, replies: Sequence[Outbound], done: Mapping[str, Sequence[str]]) -> None:
        """Replies out first, then the entries (`done`: ids per stream) acknowledged and deleted. Cut short
        (a crash), an entry may be answered and still pending, never acknowledged and unanswered."""

    async def beat(self, key: str, payload: bytes, ttl_ms: int) -> None: ...

    async def flag(self, key: str) -> bool:
        """Whether `key` exists (a standby worker's serve flag)."""
        ...

    async def forget(self, key: str) -> None: ...

    async def close(self) -> None: ...


class GatewayTransport(Protocol):
    async def enqueue(self, entries: Sequence[Outbound]) -> None: ...

    async def replies(self, stream: str, after: str, count: int, block_ms: int) -> tuple[str, list[bytes]]:
        """Replies after id `after` (waiting up to `block_ms` for one), and the id to read after next."""
        ...

    async def heartbeats(self, pattern: str) -> list[bytes]:
        """Every live heartbeat payload whose key matches `pattern`."""
        ...

    async def forget(self, key: str) -> None: ...

    async def close(self) -> None: ...
