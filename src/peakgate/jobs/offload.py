"""The job store for async callers: every call runs on a worker thread, never on the event loop.

SQLite calls block, and a big job's pages or a full-document read take long enough to stall every request the
loop serves (a 20 MB document froze /healthz for minutes). The runner calls the store only through this, and
the HTTP handlers should too (`JobRunner.store`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Protocol, TypeVar

from peakgate.jobs.model import DeferralGate, Job, NewJob
from peakgate.jobs.store import JobStore

_T = TypeVar("_T")


class Offload(Protocol):
    """Runs a blocking call elsewhere and awaits it: `asyncio.to_thread`; unit tests run it inline."""

    def __call__(self, call: Callable[[], _T], /) -> Awaitable[_T]: ...


class AsyncJobStore:
    def __init__(self, store: JobStore, offload: Offload = asyncio.to_thread) -> None:
        self._store = store
        self._offload = offload

    async def run(self, call: Callable[[], _T]) -> _T:
        """Any other blocking work that belongs with the store's (rebuilding a document from its rows)."""
        return await self._offload(call)

    async def create(self, job: NewJob) -> Job:
        return await self._offload(lambda: self._store.create(job))

    async def get(self, job_id: str) -> Job | None:
        return await self._offload(lambda: self._store.get(job_id))

    async def claim_next(self, exclude_tenants: Collection[str] = (), gate: DeferralGate | None = None) -> Job | None:
        return await self._offload(lambda: self._store.claim_next(exclude_tenants, gate))

    async def pending(self, job_id: str, limit: int) -> list[tuple[int, str]]:
        return await self._offload(lambda: self._store.pending(job_id, limit))

    async def save_chunk(self, job_id: str, translations: Sequence[tuple[int, str]], billed_characters: int) -> Job:
        return await self._offload(lambda: self._store.save_chunk(job_id, translations, billed_characters))

    async def translations(self, job_id: str) -> list[str | None]:
        return await self._offload(lambda: self._store.translations(job_id))

    async def output(self, job_id: str) -> bytes | None:
        return await self._offload(lambda: self._store.output(job_id))

    async def recognised(self, job_id: str, segments: Sequence[str], layout: bytes) -> Job:
        return await self._offload(lambda: self._store.recognised(job_id, segments, layout))

    async def layout(self, job_id: str) -> bytes | None:
        return await self._offload(lambda: self._store.layout(job_id))

    async def input_data(self, job_id: str) -> bytes | None:
        return await self._offload(lambda: self._store.input_data(job_id))

    async def finish(self, job_id: str, output: bytes | None) -> Job:
        return await self._offload(lambda: self._store.finish(job_id, output))

    async def fail(self, job_id: str, message: str) -> Job:
        return await self._offload(lambda: self._store.fail(job_id, message))

    async def release(self, job_id: str) -> None:
        await self._offload(lambda: self._store.release(job_id))

    async def recover(self) -> int:
        return await self._offload(self._store.recover)
