"""Per-key character quotas for the billing period (in-process counters)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from peakgate.admission.backend import OverQuota
from peakgate.config import KeyConfig
from peakgate.errors import QuotaExceeded


def over_quota(used: int, limit: int | None, characters: int) -> OverQuota | None:
    """The refusal when billing `characters` more on top of `used` would pass `limit` (None: unlimited)."""
    return OverQuota(used, limit) if limit is not None and used + characters > limit else None


def quota_error(refusal: OverQuota, characters: int) -> QuotaExceeded:
    return QuotaExceeded(
        f"character quota for this billing period exhausted: {refusal.used} of {refusal.limit} used, "
        f"this request needs {characters}"
    )


class Quotas:
    """Billed characters per key against `KeyConfig.quota_chars` (None: unlimited).

    Keys without a configuration (the anonymous principal) are counted but never limited.
    Counters live in memory: they restart at zero with the process or on `reset()` (new period).
    """

    def __init__(self, keys: Iterable[KeyConfig]) -> None:
        self._limits: dict[str, int] = {k.key: k.quota_chars for k in keys if k.quota_chars is not None}
        self._used: Counter[str | None] = Counter()

    def limit(self, key: str | None) -> int | None:
        return self._limits.get(key) if key is not None else None

    def refusal(self, key: str | None, characters: int, *, billed_elsewhere: int = 0) -> OverQuota | None:
        """`over_quota` for the key, counting `billed_elsewhere` (e.g. the shared ledger's last count) too."""
        return over_quota(billed_elsewhere + self._used[key], self.limit(key), characters)

    def check(self, key: str | None, characters: int) -> None:
        """Raise `QuotaExceeded` when billing `characters` more would pass the key's limit."""
        refusal = self.refusal(key, characters)
        if refusal is not None:
            raise quota_error(refusal, characters)

    def record(self, key: str | None, characters: int) -> None:
        self._used[key] += characters

    def usage(self, key: str | None) -> tuple[int, int]:
        """(character_count, character_limit) with 0 meaning unlimited, as `/v2/usage` reports it."""
        return self._used[key], self.limit(key) or 0

    def drain(self) -> dict[str | None, int]:
        """Every non-zero count, leaving all at zero."""
        counts = {key: used for key, used in self._used.items() if used}
        self._used.clear()
        return counts

    def reset(self) -> None:
        """Start a new billing period."""
        self._used.clear()
