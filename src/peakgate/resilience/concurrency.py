"""Adaptive concurrency limit, Netflix Gradient2 style.

A long-term EWMA of the RTT stands for "no queueing"; a short-term EWMA for "now". When the short one rises
above the long one (times a tolerance) requests are queueing somewhere, so the limit shrinks by the ratio;
otherwise it grows by a small queue allowance to probe for more capacity.
"""

from __future__ import annotations

import math
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

from peakgate.clock import Clock
from peakgate.errors import Overloaded
from peakgate.resilience.breaker import FailureKind, failure_kind
from peakgate.resilience.settings import ConcurrencyConfig

MIN_GRADIENT = 0.5
MAX_GRADIENT = 1.0
DRIFT_RATIO = 2.0  # long/short beyond this: the long RTT is stale from an old overload
DRIFT_DECAY = 0.95


@dataclass(frozen=True, slots=True)
class LimitState:
    limit: float
    long_rtt_s: float | None = None
    short_rtt_s: float | None = None


@dataclass(frozen=True, slots=True)
class LimitContext:
    rtt_s: float
    in_flight: int  # in flight when the sample was taken, including the finished call
    dropped: bool
    config: ConcurrencyConfig


def initial_state(config: ConcurrencyConfig) -> LimitState:
    return LimitState(limit=float(config.initial_limit))


def _ewma(previous: float | None, sample: float, span: int) -> float:
    if previous is None:
        return sample
    alpha = 2.0 / (span + 1)
    return previous + alpha * (sample - previous)


def queue_size(limit: float, config: ConcurrencyConfig) -> float:
    return float(config.queue_size) if config.queue_size is not None else math.sqrt(limit)


def _clamp_limit(limit: float, config: ConcurrencyConfig) -> float:
    return min(float(config.max_limit), max(float(config.min_limit), limit))


def decide(ctx: LimitContext, state: LimitState) -> tuple[int, LimitState]:
    """One RTT sample in, the new limit out (whole requests) plus the new state."""
    cfg = ctx.config
    if ctx.dropped:
        # A drop's RTT is the timeout, not the service time; it says "too much", so back off multiplicatively.
        limit = _clamp_limit(state.limit * cfg.drop_factor, cfg)
        return int(limit), replace(state, limit=limit)
    short = _ewma(state.short_rtt_s, ctx.rtt_s, cfg.short_window)
    long = _ewma(state.long_rtt_s, ctx.rtt_s, cfg.long_window)
    if short > 0 and long / short > DRIFT_RATIO:
        long *= DRIFT_DECAY
    state = replace(state, short_rtt_s=short, long_rtt_s=long)
    if ctx.in_flight * 2 < state.limit:
        # App-limited: a half-used limit proves nothing about capacity, so do not grow it.
        return int(state.limit), state
    gradient = MAX_GRADIENT if short <= 0 else max(MIN_GRADIENT, min(MAX_GRADIENT, cfg.rtt_tolerance * long / short))
    target = state.limit * gradient + queue_size(state.limit, cfg)
    limit = _clamp_limit(state.limit * (1 - cfg.smoothing) + target * cfg.smoothing, cfg)
    return int(limit), replace(state, limit=limit)


class AdaptiveLimiter:
    """Counts calls in flight against the current Gradient2 limit."""

    def __init__(self, config: ConcurrencyConfig, clock: Clock) -> None:
        self._config = config
        self._clock = clock
        self._state = initial_state(config)
        self._limit = config.initial_limit
        self._in_flight = 0
        self.rejected = 0

    @property
    def limit(self) -> int:
        return self._limit

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def state(self) -> LimitState:
        return self._state

    def try_acquire(self) -> bool:
        if self._in_flight >= self._limit:
            self.rejected += 1
            return False
        self._in_flight += 1
        return True

    def release(self, rtt_s: float | None, dropped: bool = False) -> None:
        """End one acquired call. `rtt_s` None: no sample (the call said nothing about capacity)."""
        if self._in_flight <= 0:
            raise RuntimeError("release without acquire")
        in_flight = self._in_flight
        self._in_flight -= 1
        if rtt_s is None and not dropped:
            return
        ctx = LimitContext(rtt_s=rtt_s or 0.0, in_flight=in_flight, dropped=dropped, config=self._config)
        self._limit, self._state = decide(ctx, self._state)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the body; raises `Overloaded` when the limit is reached."""
        if not self.try_acquire():
            raise Overloaded("concurrency limit reached", retry_after_s=self._retry_after_s())
        started = self._clock.now()
        try:
            yield
        except BaseException as exc:
            # A timeout is a drop; any other failure's RTT (often a fast crash) says nothing about capacity.
            self.release(None, dropped=failure_kind(exc) is FailureKind.TIMEOUT)
            raise
        self.release(self._clock.now() - started)

    def _retry_after_s(self) -> float:
        short = self._state.short_rtt_s
        return max(self._config.reject_retry_after_s, short or 0.0)
