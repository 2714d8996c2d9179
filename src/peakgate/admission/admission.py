"""The admission facade: authenticate, then admit or refuse by rate and quota -- never blocking.

Order of checks in `admit`: quota first (a request that can never fit this period gets 456-style
`QuotaExceeded`, not a Retry-After that would only fail again), then the per-key bucket and the
per-class bucket together. Both buckets are asked before either is charged, so a refusal by one
leaves the other untouched; `RateLimited.retry_after_s` is the longer of the two waits.

Billing: `admit` only *checks* the quota; `record` bills characters after a successful translation,
so failed requests cost the customer nothing. Concurrent in-flight requests may therefore overshoot
a quota by at most what is in flight -- accepted, as DeepL-style quotas are soft per period. Jobs and
documents pass `check_quota` alone and are billed when accepted (the service's `check_job`, `bill_job`).

Rate charges, on the other hand, happen in `admit`: rate limiting protects the service from the work
being attempted, whether or not it later succeeds.

Where buckets and counters live is the backend's business (`admission.backend`): in this process
(`local`), or in Redis shared by every gateway (`redis`, with a local fallback while Redis is out of reach).
The methods touching them are async for the shared one's sake.
"""

from __future__ import annotations

from typing import NoReturn

from peakgate.admission.backend import AdmissionBackend, Admitted, OverQuota, OverRate, Verdict
from peakgate.admission.keys import KeyRing
from peakgate.admission.local import LocalBackend
from peakgate.admission.metrics import AdmissionMetrics
from peakgate.admission.quota import quota_error
from peakgate.admission.redis_ledger import RedisLedger
from peakgate.admission.shared import SharedBackend
from peakgate.clock import Clock
from peakgate.config import PriorityClass, Settings
from peakgate.domain import Principal
from peakgate.errors import PeakgateError, RateLimited, Unauthorized
from peakgate.observe.metrics import SERVING_TENANT, Metrics


def build_backend(settings: Settings, clock: Clock, metrics: Metrics) -> AdmissionBackend:
    """The backend `settings.admission.backend` names."""
    if settings.admission.backend == "redis":
        ledger = RedisLedger.from_settings(settings)
        return SharedBackend(ledger, settings, clock, AdmissionMetrics(metrics.registry))
    return LocalBackend.from_settings(settings, clock)


class Admission:
    """Per-key token buckets, per-class buckets shared by every key of the class, and quotas.

    Principals without a configured key (open dev mode) have no per-key bucket and no quota;
    the class bucket still applies. A class smoothed by `ClassConfig.smoothing` gets a shaping
    `LeakyBucket`; per-key buckets are always token buckets (they are about fairness, not shape).
    """

    def __init__(self, settings: Settings, clock: Clock, metrics: Metrics,
                 backend: AdmissionBackend | None = None) -> None:
        self._metrics = metrics
        self._keys = KeyRing(settings.keys)
        self._backend = backend or build_backend(settings, clock, metrics)

    @property
    def open_mode(self) -> bool:
        return self._keys.open_mode

    def authenticate(self, key: str | None) -> Principal:
        try:
            principal = self._keys.authenticate(key)
        except Unauthorized as exc:
            self._reject(exc, "unauthorized", "unknown")
        SERVING_TENANT.set(principal.tenant)
        return principal

    async def admit(self, principal: Principal, characters: int, priority: PriorityClass | None = None) -> float:
        """Charge `characters` to the buckets or raise `QuotaExceeded` / `RateLimited`; returns the seconds
        the request must wait for its turn before it goes on (a smoothed class paces its requests).

        `priority`: the class the request runs at (a key may ask for a lower one than its own), whose bucket
        it draws on; None: the key's. Batch work sent with an interactive key must not drain, nor be exempt
        from, the batch class's (smoothed) bucket.
        """
        if characters < 0:
            raise ValueError(f"characters must be >= 0, got {characters}")
        priority = priority or principal.priority
        verdict = await self._backend.admit(principal.key, characters, priority)
        return self._follow(verdict, principal, characters, priority)

    async def check_quota(self, principal: Principal, characters: int, priority: PriorityClass) -> None:
        """Raise `QuotaExceeded` when billing `characters` more would pass the key's quota; charges nothing.

        On its own for jobs and documents, which are billed at submission and paced by the job runner.
        """
        verdict = await self._backend.admit(principal.key, characters, priority, rates=False)
        self._follow(verdict, principal, characters, priority)

    async def record(self, principal: Principal, characters: int) -> None:
        """Bill `characters` after a successful translation."""
        await self._backend.record(principal.key, characters)

    async def usage(self, principal: Principal) -> tuple[int, int]:
        """(character_count, character_limit), 0 meaning unlimited."""
        return await self._backend.usage(principal.key)

    async def reset_period(self) -> None:
        """Start a new billing period for every key."""
        await self._backend.reset_period()

    async def close(self) -> None:
        await self._backend.close()

    def _follow(self, verdict: Verdict, principal: Principal, characters: int, priority: PriorityClass) -> float:
        """The turn an admitted request waits for, or the refusal raised (and counted)."""
        match verdict:
            case Admitted(turn_s):
                return turn_s
            case OverQuota():
                self._reject(quota_error(verdict, characters), "quota", priority)
            case OverRate(wait, reason):
                scope = f"class {priority!r}" if reason == "class_rate" else f"tenant {principal.tenant!r}"
                msg = f"rate limit of {scope} exceeded for {characters} characters; retry in {wait:.3f} s"
                self._reject(RateLimited(msg, retry_after_s=wait), reason, priority)

    def _reject(self, exc: PeakgateError, reason: str, priority: str) -> NoReturn:
        self._metrics.rejected.labels(reason=reason, priority=priority).inc()
        raise exc
