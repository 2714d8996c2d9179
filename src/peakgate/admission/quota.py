"""Per-key character quotas for the billing period (in-process counters)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from peakgate.config import KeyConfig
from peakgate.errors import QuotaExceeded


class Quotas:
    """Billed characters per key against `KeyConfig.quota_chars` (None: unlimited).

    Keys without a configuration (the anonymous principal) are counted but never limited.
    Counters live in memory: they restart at zero with the process or on `reset()` (new period).
    """

    def __init__(self, keys: Iterable[KeyConfig]) -> None:
        self._limits: dict[str, int] = {k.key: k.quota_chars for k in keys if k.quota_chars is not None}
        self._used: Counter[str | None] = Counter()

    def check(self, key: str | None, characters: int) -> None:
        """Raise `QuotaExceeded` when billing `characters` more would pass the key's limit."""
        limit = self._limits.get(key) if key is not None else None
        if limit is None:
            return
        used = self._used[key]
        if used + characters > limit:
            raise QuotaExceeded(
                f"character quota for this billing period exhausted: {used} of {limit} used, "
                f"this request needs {characters}"
            )

    def record(self, key: str | None, characters: int) -> None:
        self._used[key] += characters

    def usage(self, key: str | None) -> tuple[int, int]:
        """(character_count, character_limit) with 0 meaning unlimited, as `/v2/usage` reports it."""
        limit = self._limits.get(key, 0) if key is not None else 0
        return self._used[key], limit

    def reset(self) -> None:
        """Start a new billing period."""
        self._used.clear()
