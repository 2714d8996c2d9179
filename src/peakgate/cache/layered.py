"""The translation cache the service talks to: L1 in process, an optional shared L2, and single-flight fills.

Single-flight: a key missing from L1 is claimed by the first request that wants it; later requests for the same
key wait on that claim instead of looking it up or translating it again. The owner asks L2, then calls `fill`
once for whatever is still missing, stores the results and hands them to the waiters. If `fill` raises, the
waiters get the same exception and nothing is stored; if the owner is cancelled, its claims are cancelled and
each waiter claims the key itself, so nobody waits on a fill that will never come.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from peakgate.cache.keys import CacheKey, Shape
from peakgate.cache.memory import MemoryCache
from peakgate.cache.metrics import CacheMetrics
from peakgate.cache.settings import CacheConfig
from peakgate.clock import Clock
from peakgate.errors import ConfigError

Fill = Callable[[list[int]], Awaitable[list[str]]]


@dataclass(frozen=True, slots=True)
class _Outcome:
    """What a claim resolves to: the stored form (None if it could not be shared) and the owner's raw outputs."""

    stored: str | None
    raw: Mapping[Shape, str] = field(default_factory=dict)  # a waiter with one of these shapes takes it as is

    def serve(self, shape: Shape) -> str | None:
        return shape.apply(self.stored) if self.stored is not None else self.raw.get(shape)


_Claim = asyncio.Future[_Outcome]


class L2Store(Protocol):
    """A shared layer. Implementations count and swallow their own failures; the facade guards anyway."""

    layer: str

    async def get_many(self, keys: Sequence[str]) -> list[str | None]: ...

    async def set_many(self, items: Mapping[str, str]) -> None: ...

    async def close(self) -> None: ...


@dataclass(slots=True)
class _Round:
    """One pass over the still-unanswered indices of a `get_or_fill` call."""

    owned: dict[str, _Claim] = field(default_factory=dict)
    owned_at: dict[str, list[int]] = field(default_factory=dict)
    waited: dict[str, _Claim] = field(default_factory=dict)
    waited_at: dict[str, list[int]] = field(default_factory=dict)


class TranslationCache:
    def __init__(self, l1: MemoryCache, l2: L2Store | None, metrics: CacheMetrics) -> None:
        self._l1 = l1
        self._l2 = l2
        self._metrics = metrics
        self._inflight: dict[str, _Claim] = {}

    @property
    def l1(self) -> MemoryCache:
        return self._l1

    @property
    def l2(self) -> L2Store | None:
        return self._l2

    @property
    def inflight(self) -> int:
        return len(self._inflight)

    async def get_many(self, keys: Sequence[str]) -> list[str | None]:
        """Stored (canonical) values: L1, then L2 for what L1 lacks, backfilling L1 with L2's hits."""
        values = self._l1.get_many(keys)
        missing = [i for i, v in enumerate(values) if v is None]
        found = await self._l2_get([keys[i] for i in missing])
        for i, value in zip(missing, found, strict=True):
            values[i] = value
        return values

    async def set_many(self, items: Mapping[str, str]) -> None:
        """Store canonical values in every layer."""
        self._l1.set_many(items)
        await self._l2_set(items)

    async def lookup(self, entries: Sequence[CacheKey]) -> list[str | None]:
        """Translations ready to serve (re-shaped for each requester), None for misses."""
        values = await self.get_many([e.key for e in entries])
        return [None if v is None else e.shape.apply(v) for e, v in zip(entries, values, strict=True)]

    async def store(self, entries: Sequence[CacheKey], translations: Sequence[str]) -> None:
        """Store raw translations of `entries`; ones that cannot be shared safely are skipped."""
        items: dict[str, str] = {}
        for entry, translation in zip(entries, translations, strict=True):
            stored = entry.shape.canonicalize(translation)
            if stored is not None:
                items.setdefault(entry.key, stored)
        await self.set_many(items)

    async def get_or_fill(self, entries: Sequence[CacheKey], fill: Fill) -> list[str]:
        """A translation for every entry; misses nobody else is filling go to ONE `fill(indices)` call.

        `fill` gets indices into `entries` (one per distinct key and shape, ascending) and returns the raw
        translations for them, in order. The caller gets exactly what `fill` returned for its own indices.
        """
        values: list[str | None] = [None] * len(entries)
        pending = list(range(len(entries)))
        while pending:
            for i, value in zip(pending, self._l1.get_many([entries[i].key for i in pending]), strict=True):
                if value is not None:
                    values[i] = entries[i].shape.apply(value)
            rnd = self._claim(entries, [i for i in pending if values[i] is None])
            if rnd.owned:
                await self._run_owned(entries, rnd, values, fill)
            pending = await self._await_others(entries, rnd, values) if rnd.waited else []
        return _complete(values)

    async def close(self) -> None:
        if self._l2 is not None:
            await self._l2.close()

    def _claim(self, entries: Sequence[CacheKey], indices: list[int]) -> _Round:
        rnd = _Round()
        loop = asyncio.get_running_loop()
        for i in indices:
            key = entries[i].key
            if key in rnd.owned:
                rnd.owned_at[key].append(i)
                continue
            other = self._inflight.get(key)
            if other is not None and not other.done():
                rnd.waited[key] = other
                rnd.waited_at.setdefault(key, []).append(i)
                continue
            claim: _Claim = loop.create_future()
            self._inflight[key] = claim
            rnd.owned[key] = claim
            rnd.owned_at[key] = [i]
        return rnd

    async def _run_owned(self, entries: Sequence[CacheKey], rnd: _Round, values: list[str | None], fill: Fill) -> None:
        try:
            await self._fill_owned(entries, rnd, values, fill)
        except Exception as exc:
            for claim in rnd.owned.values():
                _fail(claim, exc)
            raise
        except BaseException:
            for claim in rnd.owned.values():
                claim.cancel()  # waiters see a cancelled claim and take the key over
            raise
        finally:
            for key, claim in rnd.owned.items():
                if self._inflight.get(key) is claim:
                    del self._inflight[key]

    async def _fill_owned(self, entries: Sequence[CacheKey], rnd: _Round, values: list[str | None], fill: Fill) -> None:
        keys = list(rnd.owned)
        for key, stored in zip(keys, await self._l2_get(keys), strict=True):
            if stored is not None:  # already backfilled into L1
                self._settle(entries, rnd, key, stored, values)
        todo = [k for k in keys if not rnd.owned[k].done()]
        if not todo:
            return
        indices = _distinct_shapes(entries, [i for k in todo for i in rnd.owned_at[k]])
        raw = await fill(indices)
        if len(raw) != len(indices):
            raise ValueError(f"fill returned {len(raw)} translations for {len(indices)} indices")
        by_shape = {(entries[i].key, entries[i].shape): t for i, t in zip(indices, raw, strict=True)}
        items: dict[str, str] = {}
        for i in indices:
            stored = entries[i].shape.canonicalize(by_shape[entries[i].key, entries[i].shape])
            if stored is not None:
                items.setdefault(entries[i].key, stored)
        self._l1.set_many(items)  # before waking waiters, so a retrying one finds it
        for key in todo:
            raws = {entries[i].shape: by_shape[key, entries[i].shape] for i in rnd.owned_at[key]}
            for i in rnd.owned_at[key]:
                values[i] = raws[entries[i].shape]
            rnd.owned[key].set_result(_Outcome(items.get(key), raws))
        await self._l2_set(items)

    @staticmethod
    def _settle(entries: Sequence[CacheKey], rnd: _Round, key: str, stored: str, values: list[str | None]) -> None:
        for i in rnd.owned_at[key]:
            values[i] = entries[i].shape.apply(stored)
        rnd.owned[key].set_result(_Outcome(stored))

    async def _await_others(self, entries: Sequence[CacheKey], rnd: _Round, values: list[str | None]) -> list[int]:
        """Fill `values` from other requests' claims; returns the indices to try again."""
        self._metrics.single_flight.inc(sum(len(ix) for ix in rnd.waited_at.values()))
        await asyncio.wait(rnd.waited.values())  # unlike awaiting, a cancelled claim does not cancel us
        retry: list[int] = []
        for key, claim in rnd.waited.items():
            if claim.cancelled():
                retry.extend(rnd.waited_at[key])
                continue
            exc = claim.exception()
            if exc is not None:
                raise exc
            outcome = claim.result()
            for i in rnd.waited_at[key]:
                value = outcome.serve(entries[i].shape)
                if value is None:
                    retry.append(i)  # the owner's output does not fit our shape; translate it ourselves
                values[i] = value
        return sorted(retry)

    async def _l2_get(self, keys: Sequence[str]) -> list[str | None]:
        if self._l2 is None or not keys:
            return [None] * len(keys)
        try:
            found = await self._l2.get_many(keys)
        except Exception as exc:  # a cache failure must never fail a request
            self._metrics.errors.labels(self._l2.layer, type(exc).__name__).inc()
            return [None] * len(keys)
        hits = {k: v for k, v in zip(keys, found, strict=True) if v is not None}
        if hits:
            self._l1.set_many(hits)
        return found

    async def _l2_set(self, items: Mapping[str, str]) -> None:
        if self._l2 is None or not items:
            return
        try:
            await self._l2.set_many(items)
        except Exception as exc:  # a cache failure must never fail a request
            self._metrics.errors.labels(self._l2.layer, type(exc).__name__).inc()


def build_cache(config: CacheConfig, clock: Clock, metrics: CacheMetrics) -> TranslationCache:
    """"memory": L1 only; "redis": L1 in front of a shared Redis."""
    l1 = MemoryCache(
        max_entries=config.l1_max_entries,
        max_bytes=config.l1_max_bytes,
        ttl_s=config.l1_ttl_s if config.l1_ttl_s is not None else config.ttl_s,
        clock=clock,
        metrics=metrics,
    )
    if config.backend == "memory":
        return TranslationCache(l1, None, metrics)
    if config.backend == "redis":
        from peakgate.cache.redis_l2 import RedisCache

        return TranslationCache(l1, RedisCache.from_config(config, clock, metrics), metrics)
    raise ConfigError(f"unknown cache backend {config.backend!r}")


def _distinct_shapes(entries: Sequence[CacheKey], indices: list[int]) -> list[int]:
    seen: dict[tuple[str, Shape], int] = {}
    for i in sorted(indices):
        seen.setdefault((entries[i].key, entries[i].shape), i)
    return sorted(seen.values())


def _fail(claim: _Claim, exc: BaseException) -> None:
    if not claim.done():
        claim.set_exception(exc)
        claim.exception()  # marks it retrieved: with no waiters, asyncio would log it as lost


def _complete(values: list[str | None]) -> list[str]:
    out = [v for v in values if v is not None]
    if len(out) != len(values):
        raise AssertionError("get_or_fill left an entry unanswered")
    return out
