"""What the admission facade asks of a backend, and the verdicts it gets back.

Backends decide; the facade turns a refusal into the error the caller sees and counts it, so both backends
(`local`, `shared`) refuse with the same words and metrics.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

from peakgate.config import PriorityClass

RateReason = Literal["class_rate", "key_rate"]


@dataclass(frozen=True, slots=True)
class Admitted:
    """Charged to every limiter; `turn_s`: how long the request must wait for its turn (a shaped class)."""

    turn_s: float = 0.0


@dataclass(frozen=True, slots=True)
class OverQuota:
    """Billing the request would pass the key's quota: `used` of `limit` characters billed so far."""

    used: int
    limit: int


@dataclass(frozen=True, slots=True)
class OverRate:
    """A limiter cannot take the request for `wait_s` (the longest wait of all); nothing was charged."""

    wait_s: float
    reason: RateReason


Verdict = Admitted | OverQuota | OverRate


class AdmissionBackend(Protocol):
    """Buckets and quotas. `key`: the API key (None: the anonymous principal, counted but never over quota)."""

    async def admit(self, key: str | None, characters: int, priority: PriorityClass, *, rates: bool = True
                    ) -> Verdict:
        """The quota first, then (`rates`) the class's and the key's limiters, asked together and charged only
        if all agree. `rates=False` checks the quota alone and charges nothing (jobs)."""
        ...

    async def record(self, key: str | None, characters: int) -> None:
        """Bill `characters`."""
        ...

    async def usage(self, key: str | None) -> tuple[int, int]:
        """(characters billed this period, limit), 0 meaning unlimited."""
        ...

    async def reset_period(self) -> None:
        """Start a new billing period for every key."""
        ...

    async def close(self) -> None: ...
