"""Circuit breaker per backend or replica: closed -> open -> half-open -> closed | open, on an injected Clock.

The trip rule and the open-time growth are pure functions; `CircuitBreaker` holds the state and acts.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import TypeVar

from peakgate.clock import Clock
from peakgate.errors import BackendError, EngineTimeout, Unavailable
from peakgate.resilience.settings import BreakerConfig
from peakgate.resilience.window import CountWindow, OutcomeWindow, TimeWindow, WindowCounts

T = TypeVar("T")


class BreakerState(StrEnum):
    CLOSED = "closed"
    OPEN = "open"
    HALF_OPEN = "half_open"


class FailureKind(StrEnum):
    ERROR = "error"
    TIMEOUT = "timeout"


@dataclass(frozen=True, slots=True)
class Transition:
    """What a listener (metrics, logs) sees on every state change."""

    name: str
    old: BreakerState
    new: BreakerState
    at: float
    reason: str


@dataclass(frozen=True, slots=True)
class TripContext:
    window: WindowCounts
    consecutive_timeouts: int
    config: BreakerConfig


def trip_reason(ctx: TripContext) -> str | None:
    """Why a closed breaker should open now, or None to stay closed."""
    cfg = ctx.config
    if ctx.consecutive_timeouts >= cfg.consecutive_timeouts:
        return f"{ctx.consecutive_timeouts} consecutive timeouts"
    if ctx.window.total >= cfg.min_requests and ctx.window.failure_rate >= cfg.error_rate_threshold:
        return f"error rate {ctx.window.failure_rate:.2f} over {ctx.window.total} calls"
    return None


def open_duration_s(trips: int, config: BreakerConfig) -> float:
    """Open time after the `trips`-th trip in a row (1-based): exponential, capped."""
    return min(config.max_open_s, config.open_s * config.open_backoff_factor ** max(0, trips - 1))


def failure_kind(exc: BaseException) -> FailureKind | None:
    """How an exception from a backend call counts; None: the caller's fault, not the backend's."""
    if isinstance(exc, EngineTimeout | TimeoutError):
        return FailureKind.TIMEOUT
    if isinstance(exc, BackendError):
        return FailureKind.ERROR
    return None


def _window(config: BreakerConfig) -> OutcomeWindow:
    return CountWindow(config.window_size) if config.window_kind == "count" else TimeWindow(config.window_s)


class CircuitBreaker:
    """One breaker. Call `allow()` (or `check()`) before a call and exactly one `record_*` after an allowed one.

    `on_transition` is called synchronously on each state change; `transitions` counts them by (old, new).
    """

    def __init__(
        self,
        config: BreakerConfig,
        clock: Clock,
        *,
        name: str = "",
        on_transition: Callable[[Transition], None] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self.name = name
        self._on_transition = on_transition
        self._window = _window(config)
        self._state = BreakerState.CLOSED
        self._open_until = 0.0
        self._trips = 0  # trips since the last successful close; drives the exponential open time
        self._consecutive_timeouts = 0
        self._probes_started = 0
        self._probe_successes = 0
        self.transitions: dict[tuple[BreakerState, BreakerState], int] = {}
        self.rejected = 0

    @property
    def state(self) -> BreakerState:
        # Reading the state is how callers (health checks, routers) notice that an open breaker may probe.
        self._maybe_half_open()
        return self._state

    @property
    def trips(self) -> int:
        return self._trips

    def retry_after_s(self) -> float:
        """Seconds until the breaker may let a call through again; never 0 while it refuses."""
        remaining = self._open_until - self._clock.now()
        return remaining if remaining > 0 else self._config.open_s

    def allow(self) -> bool:
        self._maybe_half_open()
        if self._state is BreakerState.CLOSED:
            return True
        if self._state is BreakerState.HALF_OPEN and self._probes_started < self._config.half_open_probes:
            self._probes_started += 1
            return True
        self.rejected += 1
        return False

    def check(self) -> None:
        """`allow()`, raising `Unavailable` with a `retry_after_s` when refused."""
        if not self.allow():
            raise Unavailable(f"circuit {self.name or 'breaker'} is {self._state}", retry_after_s=self.retry_after_s())

    def record_success(self, latency_s: float = 0.0) -> None:
        slow = self._config.slow_call_s
        if slow is not None and latency_s >= slow:
            self.record_failure(FailureKind.TIMEOUT)
            return
        self._consecutive_timeouts = 0
        if self._state is BreakerState.HALF_OPEN:
            self._probe_successes += 1
            if self._probe_successes >= self._config.half_open_probes:
                self._close()
        elif self._state is BreakerState.CLOSED:
            self._window.add(self._clock.now(), failed=False)

    def record_failure(self, kind: FailureKind = FailureKind.ERROR) -> None:
        self._consecutive_timeouts = self._consecutive_timeouts + 1 if kind is FailureKind.TIMEOUT else 0
        if self._state is BreakerState.HALF_OPEN:
            self._open("half-open probe failed")
        elif self._state is BreakerState.CLOSED:
            self._window.add(self._clock.now(), failed=True)
            ctx = TripContext(self._window.counts(self._clock.now()), self._consecutive_timeouts, self._config)
            reason = trip_reason(ctx)
            if reason is not None:
                self._open(reason)
        # Late results of calls allowed before the trip change nothing while open.

    def record_ignored(self) -> None:
        """An allowed call ended in a way that says nothing about the backend (e.g. a bad request)."""
        if self._state is BreakerState.HALF_OPEN and self._probes_started > self._probe_successes:
            self._probes_started -= 1

    async def call(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run `fn` under the breaker: raises `Unavailable` when open, records the outcome otherwise."""
        self.check()
        started = self._clock.now()
        try:
            result = await fn()
        except BaseException as exc:
            kind = failure_kind(exc)
            if kind is None:
                self.record_ignored()
            else:
                self.record_failure(kind)
            raise
        self.record_success(self._clock.now() - started)
        return result

    def _maybe_half_open(self) -> None:
        if self._state is BreakerState.OPEN and self._clock.now() >= self._open_until:
            self._probes_started = 0
            self._probe_successes = 0
            self._move(BreakerState.HALF_OPEN, "open time elapsed")

    def _open(self, reason: str) -> None:
        self._trips += 1
        self._open_until = self._clock.now() + open_duration_s(self._trips, self._config)
        self._window.reset()
        self._move(BreakerState.OPEN, reason)

    def _close(self) -> None:
        self._trips = 0
        self._consecutive_timeouts = 0
        self._window.reset()
        self._move(BreakerState.CLOSED, f"{self._probe_successes} probes succeeded")

    def _move(self, new: BreakerState, reason: str) -> None:
        old, self._state = self._state, new
        self.transitions[(old, new)] = self.transitions.get((old, new), 0) + 1
        if self._on_transition is not None:
            self._on_transition(Transition(self.name, old, new, self._clock.now(), reason))


class Breakers:
    """Breakers keyed by backend or replica name, made on first use with one config and one listener."""

    def __init__(
        self,
        config: BreakerConfig,
        clock: Clock,
        on_transition: Callable[[Transition], None] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._on_transition = on_transition
        self._breakers: dict[str, CircuitBreaker] = {}

    def get(self, name: str) -> CircuitBreaker:
        breaker = self._breakers.get(name)
        if breaker is None:
            breaker = CircuitBreaker(self._config, self._clock, name=name, on_transition=self._on_transition)
            self._breakers[name] = breaker
        return breaker

    def is_open(self, name: str) -> bool:
        """True while calls to `name` are refused outright (half-open still lets probes through)."""
        breaker = self._breakers.get(name)
        return breaker is not None and breaker.state is BreakerState.OPEN

    def states(self) -> dict[str, BreakerState]:
        return {name: b.state for name, b in self._breakers.items()}
