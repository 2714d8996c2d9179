"""In-process admission: this process's limiters and quota counters (the `local` backend, and the shared
backend's fallback while Redis is out of reach)."""

from __future__ import annotations

from typing import Protocol

from peakgate.admission.backend import Admitted, OverQuota, OverRate, RateReason, Verdict
from peakgate.admission.bucket import RateLimiter, TokenBucket, make_limiter
from peakgate.admission.quota import Quotas
from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, ClassConfig, PriorityClass, Settings


class QuotaBook(Protocol):
    """Where a local backend counts billed characters (`Quotas`, or the shared backend's outage book)."""

    def refusal(self, key: str | None, characters: int) -> OverQuota | None: ...

    def record(self, key: str | None, characters: int) -> None: ...

    def usage(self, key: str | None) -> tuple[int, int]: ...

    def reset(self) -> None: ...


class LocalLimiters:
    """Per-key token buckets and per-class limiters shared by every key of the class, at `share` of every
    configured rate and burst (1.0 normally; the fallback's share while the shared ledger is out of reach).

    A class smoothed by `ClassConfig.smoothing` gets a shaping `LeakyBucket` (its `max_smoothing_delay_s` is not
    scaled: how long a request may wait for its turn is about the request, not the rate). Per-key buckets are
    always token buckets (they are about fairness, not shape).
    """

    def __init__(self, settings: Settings, clock: Clock, share: float = 1.0) -> None:
        self._keys = {
            k.key: TokenBucket(k.rate_chars_per_s * share, k.burst_chars * share, clock) for k in settings.keys
        }
        self._classes: dict[PriorityClass, RateLimiter] = {}
        for name in PRIORITY_ORDER:
            cls = settings.classes.get(name, ClassConfig())
            self._classes[name] = make_limiter(
                cls.rate_chars_per_s * share, cls.burst_chars * share, clock, smoothing=cls.smoothing,
                max_delay_s=cls.max_smoothing_delay_s,
            )

    def decide(self, key: str | None, characters: int, priority: PriorityClass) -> Admitted | OverRate:
        """Every limiter asked before any is charged; the longest wait refuses (a tie names the key's)."""
        limiters = self._limiters(key, priority)
        wait, reason = max((limiter.wait_time(characters), why) for limiter, why in limiters)
        if wait > 0.0:
            return OverRate(wait, reason)
        return Admitted(max(limiter.take(characters) for limiter, _ in limiters))

    def _limiters(self, key: str | None, priority: PriorityClass) -> list[tuple[RateLimiter, RateReason]]:
        limiters: list[tuple[RateLimiter, RateReason]] = [(self._classes[priority], "class_rate")]
        bucket = self._keys.get(key) if key is not None else None
        if bucket is not None:
            limiters.append((bucket, "key_rate"))
        return limiters


class LocalBackend:
    """`AdmissionBackend` in one process: quota first, then the limiters."""

    def __init__(self, quotas: QuotaBook, limiters: LocalLimiters) -> None:
        self._quotas = quotas
        self._limiters = limiters

    @classmethod
    def from_settings(cls, settings: Settings, clock: Clock) -> LocalBackend:
        return cls(Quotas(settings.keys), LocalLimiters(settings, clock))

    async def admit(self, key: str | None, characters: int, priority: PriorityClass, *, rates: bool = True
                    ) -> Verdict:
        refusal = self._quotas.refusal(key, characters)
        if refusal is not None:
            return refusal
        return self._limiters.decide(key, characters, priority) if rates else Admitted()

    async def record(self, key: str | None, characters: int) -> None:
        self._quotas.record(key, characters)

    async def usage(self, key: str | None) -> tuple[int, int]:
        return self._quotas.usage(key)

    async def reset_period(self) -> None:
        self._quotas.reset()

    async def close(self) -> None:
        return None
