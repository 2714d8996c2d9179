"""The admission facade: authenticate, then admit or refuse by rate and quota -- never blocking.

Order of checks in `admit`: quota first (a request that can never fit this period gets 456-style
`QuotaExceeded`, not a Retry-After that would only fail again), then the per-key bucket and the
per-class bucket together. Both buckets are asked before either is charged, so a refusal by one
leaves the other untouched; `RateLimited.retry_after_s` is the longer of the two waits.

Billing: `admit` only *checks* the quota; `record` bills characters after a successful translation,
so failed requests cost the customer nothing. Concurrent in-flight requests may therefore overshoot
a quota by at most what is in flight -- accepted, as DeepL-style quotas are soft per period.

Rate charges, on the other hand, happen in `admit`: rate limiting protects the service from the work
being attempted, whether or not it later succeeds.
"""

from __future__ import annotations

from typing import NoReturn

from peakgate.admission.bucket import RateLimiter, TokenBucket, make_limiter
from peakgate.admission.keys import KeyRing
from peakgate.admission.quota import Quotas
from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, ClassConfig, PriorityClass, Settings
from peakgate.domain import Principal
from peakgate.errors import PeakgateError, QuotaExceeded, RateLimited, Unauthorized
from peakgate.observe.metrics import Metrics


class Admission:
    """Per-key token buckets, per-class buckets shared by every key of the class, and quotas.

    Principals without a configured key (open dev mode) have no per-key bucket and no quota;
    the class bucket still applies. A class smoothed by `ClassConfig.smoothing` gets a shaping
    `LeakyBucket`; per-key buckets are always token buckets (they are about fairness, not shape).
    """

    def __init__(self, settings: Settings, clock: Clock, metrics: Metrics) -> None:
        self._metrics = metrics
        self._keys = KeyRing(settings.keys)
        self._quotas = Quotas(settings.keys)
        self._key_buckets = {k.key: TokenBucket(k.rate_chars_per_s, k.burst_chars, clock) for k in settings.keys}
        self._class_buckets: dict[PriorityClass, RateLimiter] = {}
        for name in PRIORITY_ORDER:
            cls = settings.classes.get(name, ClassConfig())
            self._class_buckets[name] = make_limiter(
                cls.rate_chars_per_s, cls.burst_chars, clock, smoothing=cls.smoothing,
                max_delay_s=cls.max_smoothing_delay_s,
            )

    @property
    def open_mode(self) -> bool:
        return self._keys.open_mode

    def authenticate(self, key: str | None) -> Principal:
        try:
            return self._keys.authenticate(key)
        except Unauthorized as exc:
            self._reject(exc, "unauthorized", "unknown")

    def admit(self, principal: Principal, characters: int, priority: PriorityClass | None = None) -> float:
        """Charge `characters` to the buckets or raise `QuotaExceeded` / `RateLimited`; returns the seconds
        the request must wait for its turn before it goes on (a smoothed class paces its requests).

        `priority`: the class the request runs at (a key may ask for a lower one than its own), whose bucket
        it draws on; None: the key's. Batch work sent with an interactive key must not drain, nor be exempt
        from, the batch class's (smoothed) bucket.
        """
        if characters < 0:
            raise ValueError(f"characters must be >= 0, got {characters}")
        priority = priority or principal.priority
        try:
            self._quotas.check(principal.key, characters)
        except QuotaExceeded as exc:
            self._reject(exc, "quota", priority)
        limiters = self._limiters(principal, priority)
        waits = [(limiter.wait_time(characters), reason) for limiter, reason in limiters]
        wait, reason = max(waits)
        if wait > 0.0:
            scope = f"class {priority!r}" if reason == "class_rate" else f"tenant {principal.tenant!r}"
            msg = f"rate limit of {scope} exceeded for {characters} characters; retry in {wait:.3f} s"
            self._reject(RateLimited(msg, retry_after_s=wait), reason, priority)
        return max(limiter.take(characters) for limiter, _ in limiters)

    def record(self, principal: Principal, characters: int) -> None:
        """Bill `characters` after a successful translation."""
        self._quotas.record(principal.key, characters)

    def usage(self, principal: Principal) -> tuple[int, int]:
        """(character_count, character_limit), 0 meaning unlimited."""
        return self._quotas.usage(principal.key)

    def reset_period(self) -> None:
        """Start a new billing period for every key."""
        self._quotas.reset()

    def _limiters(self, principal: Principal, priority: PriorityClass) -> list[tuple[RateLimiter, str]]:
        limiters: list[tuple[RateLimiter, str]] = [(self._class_buckets[priority], "class_rate")]
        key_bucket = self._key_buckets.get(principal.key) if principal.key is not None else None
        if key_bucket is not None:
            limiters.append((key_bucket, "key_rate"))
        return limiters

    def _reject(self, exc: PeakgateError, reason: str, priority: str) -> NoReturn:
        self._metrics.rejected.labels(reason=reason, priority=priority).inc()
        raise exc
