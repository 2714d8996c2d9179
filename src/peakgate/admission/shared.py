"""Shared admission: buckets and quotas in a ledger every gateway shares, with a local fallback.

While the ledger answers, every decision is the ledger's (one atomic call), so limits and quotas hold across
gateways and survive their restarts. When it fails, this gateway decides alone: its own limiters at
`fallback_share` of every rate and burst (each gateway alone must not let the whole cluster's rate through),
and quotas against the last shared count plus its own spend since, which is replayed into the ledger before the
ledger is used again. `peakgate_admission_fallback` is 1 meanwhile, and every fallback answer is counted.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from peakgate.admission.backend import Verdict
from peakgate.admission.local import LocalBackend, LocalLimiters
from peakgate.admission.metrics import AdmissionMetrics
from peakgate.admission.outage import Outage, OutageBook, SpendBatch
from peakgate.clock import Clock
from peakgate.config import PriorityClass, Settings
from peakgate.errors import Unavailable

_T = TypeVar("_T")


class Ledger(Protocol):
    """The shared store. Every method raises `Unavailable` when the store cannot be reached."""

    async def admit(self, key: str | None, characters: int, priority: PriorityClass, *, rates: bool
                    ) -> tuple[Verdict, int]:
        """`AdmissionBackend.admit` in one atomic step; also returns the key's billed count it saw."""
        ...

    async def record(self, key: str | None, characters: int) -> int:
        """Bill `characters`; returns the key's new count."""
        ...

    async def used(self, key: str | None) -> int: ...

    async def replay(self, batch: SpendBatch) -> None:
        """Add the batch's spend to the counters, once per batch id however often it is replayed."""
        ...

    async def reset(self, keys: list[str | None]) -> None:
        """Zero these keys' counters."""
        ...

    async def close(self) -> None: ...


class SharedBackend:
    """`AdmissionBackend` over a shared `Ledger`, falling back to local limiting while it is out of reach."""

    def __init__(self, ledger: Ledger, settings: Settings, clock: Clock, metrics: AdmissionMetrics) -> None:
        config = settings.admission
        self._ledger = ledger
        self._keys: list[str | None] = [None, *(k.key for k in settings.keys)]
        self._book = OutageBook(settings.keys)
        self._fallback = LocalBackend(self._book, LocalLimiters(settings, clock, config.fallback_share))
        self._outage = Outage(clock, config.retry_redis_s, metrics, config.fallback_share)
        self._decisions = metrics.fallback_decisions

    @property
    def on_fallback(self) -> bool:
        return self._outage.active

    async def admit(self, key: str | None, characters: int, priority: PriorityClass, *, rates: bool = True
                    ) -> Verdict:
        shared = await self._shared(lambda: self._ledger.admit(key, characters, priority, rates=rates))
        if shared is None:
            self._decisions.labels("admit" if rates else "check_quota").inc()
            return await self._fallback.admit(key, characters, priority, rates=rates)
        verdict, used = shared
        self._book.seen(key, used)
        return verdict

    async def record(self, key: str | None, characters: int) -> None:
        used = await self._shared(lambda: self._ledger.record(key, characters))
        if used is None:
            self._decisions.labels("record").inc()
            await self._fallback.record(key, characters)  # queued for the ledger
        else:
            self._book.seen(key, used)

    async def usage(self, key: str | None) -> tuple[int, int]:
        used = await self._shared(lambda: self._ledger.used(key))
        if used is None:
            self._decisions.labels("usage").inc()
        else:
            self._book.seen(key, used)
        return self._book.usage(key)

    async def reset_period(self) -> None:
        """Raises `Unavailable` when the ledger is out of reach: a new period is not started on one gateway."""
        await self._ledger.reset(self._keys)
        self._book.reset()

    async def close(self) -> None:
        await self._ledger.close()

    async def _shared(self, call: Callable[[], Awaitable[_T]]) -> _T | None:
        """The ledger's answer, or None while it is out of reach. Spend queued during an outage goes in first."""
        if not self._outage.may_try():
            return None
        try:
            while (batch := self._book.batch()) is not None:  # a failed replay's batch, then the spend since
                await self._ledger.replay(batch)
                self._book.sent(batch)
            result = await call()
        except Unavailable as exc:
            self._outage.failed(exc)
            return None
        self._outage.recovered()
        return result
