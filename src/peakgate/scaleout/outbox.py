"""Group sends into one round trip: whatever is handed in while a flush is on the wire goes in the next one.

An idle sender flushes at once (no added wait); a busy one pays one Redis round trip per flush, not per item,
which is what keeps the queue's CPU cost per request low at load (XADDs at the gateway, reply + XACK + XDEL
transactions at the worker).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, TypeVar

_T = TypeVar("_T")


class Outbox(Generic[_T]):
    def __init__(self, flush: Callable[[Sequence[_T]], Awaitable[None]]) -> None:
        self._flush = flush
        self._pending: list[tuple[_T, asyncio.Future[None]]] = []
        self._sender: asyncio.Task[None] | None = None

    async def send(self, item: _T) -> None:
        """Return once `item` went out; raise its flush's error (`QueueUnreachable`) if that failed."""
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pending.append((item, future))
        if self._sender is None:
            self._sender = asyncio.create_task(self._drain(), name="peakgate-outbox")
        await future

    async def _drain(self) -> None:
        try:
            while self._pending:
                batch, self._pending = self._pending, []
                try:
                    await self._flush([item for item, _ in batch])
                except Exception as exc:  # a bug must fail the senders too, never leave them waiting
                    for _, future in batch:
                        if not future.done():
                            future.set_exception(exc)
                else:
                    for _, future in batch:
                        if not future.done():
                            future.set_result(None)
        finally:
            self._sender = None

    async def close(self) -> None:
        """Wait for what is on the wire; later sends start a new sender."""
        if self._sender is not None:
            await asyncio.gather(self._sender, return_exceptions=True)
