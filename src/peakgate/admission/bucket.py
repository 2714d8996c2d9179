"""Character-weighted rate limiters: pure O(1) arithmetic on an injected clock, no awaits, no I/O.

Both limiters answer the same question -- "how long until `cost` characters may pass?" -- so admission
can ask every limiter first and charge them only when all agree (no partial charges on refusal).

Requests bigger than the burst: a `TokenBucket` admits them once it is *full* and then goes into debt
(the balance turns negative and refill repays it). The caller therefore pays the whole cost, keeping the
long-run rate honest, yet is never refused forever: Retry-After for such a cost is the time to refill.
"""

from __future__ import annotations

from abc import ABC, abstractmethod

from peakgate.clock import Clock

# Float noise when refilling (e.g. 0.1 s * 3 chars/s); far below one character or one microsecond.
_EPSILON = 1e-6


class RateLimiter(ABC):
    """What admission needs from a limiter."""

    @abstractmethod
    def wait_time(self, cost: float) -> float:
        """Seconds until `cost` could be taken; 0.0 means now. Changes nothing."""

    @abstractmethod
    def take(self, cost: float) -> float:
        """Charge `cost` unconditionally (callers check `wait_time` first); returns the seconds the request
        must still wait before it passes (a pacer's outlet; 0.0 for a bucket that admits bursts)."""

    def try_take(self, cost: float) -> float:
        """Take `cost` and return 0.0, or take nothing and return the seconds to wait (Retry-After)."""
        wait = self.wait_time(cost)
        if wait == 0.0:
            self.take(cost)
        return wait


def _check_rate(rate: float) -> None:
    if rate <= 0:
        raise ValueError(f"rate must be positive, got {rate}")


class TokenBucket(RateLimiter):
    """Classic token bucket: holds up to `burst` characters, refills at `rate` characters per second.

    Starts full, so an idle client may burst. Costs above `burst` are admitted from a full bucket and
    leave a debt (see the module docstring).
    """

    def __init__(self, rate: float, burst: float, clock: Clock) -> None:
        _check_rate(rate)
        if burst <= 0:
            raise ValueError(f"burst must be positive, got {burst}")
        self.rate = rate
        self.capacity = burst
        self._clock = clock
        self._tokens = burst
        self._stamp = clock.now()

    @property
    def tokens(self) -> float:
        """The current balance (negative while in debt)."""
        self._refill()
        return self._tokens

    def _refill(self) -> None:
        now = self._clock.now()
        if now > self._stamp:  # a clock that steps back must not mint tokens
            self._tokens = min(self.capacity, self._tokens + (now - self._stamp) * self.rate)
            self._stamp = now

    def wait_time(self, cost: float) -> float:
        self._refill()
        deficit = min(cost, self.capacity) - self._tokens
        return 0.0 if deficit <= _EPSILON else deficit / self.rate

    def take(self, cost: float) -> float:
        self._refill()
        self._tokens -= cost
        return 0.0


class LeakyBucket(RateLimiter):
    """Leaky bucket as a shaper: no bursts, requests pass one after another at `rate`.

    Each admitted cost occupies the outlet for `cost / rate` seconds. A request that finds the outlet busy
    for at most `max_delay_s` is admitted and told how long to wait for its turn (`take`); a longer wait is
    refused with the excess as Retry-After. With `max_delay_s = 0` it is a pure pacer (GCRA with zero
    tolerance), which refuses two requests that merely arrive a few milliseconds apart. A cost of any size
    is admitted once the outlet is free, so big requests pass eventually too.
    """

    def __init__(self, rate: float, clock: Clock, max_delay_s: float = 0.0) -> None:
        _check_rate(rate)
        if max_delay_s < 0:
            raise ValueError(f"max_delay_s must be >= 0, got {max_delay_s}")
        self.rate = rate
        self.max_delay_s = max_delay_s
        self._clock = clock
        self._free_at = clock.now()

    def wait_time(self, cost: float) -> float:
        wait = self._free_at - self._clock.now() - self.max_delay_s
        return 0.0 if wait <= _EPSILON / self.rate else wait

    def take(self, cost: float) -> float:
        now = self._clock.now()
        delay = max(0.0, self._free_at - now)
        self._free_at = max(self._free_at, now) + cost / self.rate
        return delay


def make_limiter(
    rate: float, burst: float, clock: Clock, *, smoothing: bool, max_delay_s: float = 0.0
) -> RateLimiter:
    """A `LeakyBucket` shaping with at most `max_delay_s` of wait when `smoothing` (burst is then ignored),
    else a `TokenBucket`."""
    return LeakyBucket(rate, clock, max_delay_s) if smoothing else TokenBucket(rate, burst, clock)
