"""Retry budget (Finagle/Envoy style) and a deadline-aware backoff.

Retries stay within `ratio` of recent requests plus a small floor per second, so a failing backend sees at most
(1 + ratio) times its normal load instead of a retry storm.
"""

from __future__ import annotations

from peakgate.clock import Clock
from peakgate.resilience.settings import RetryBudgetConfig
from peakgate.resilience.window import TimeWindow


def retry_allowed(requests: int, retries: int, config: RetryBudgetConfig) -> bool:
    """Pure: whether one more retry fits the budget given the window's request and retry counts."""
    budget = config.ratio * requests + config.min_retries_per_s * config.window_s
    return retries + 1 <= budget


class RetryBudget:
    """Counts original requests and retries over `window_s` on the Clock.

    Call `record_request()` once per original request (not per retry), and `record_retry()` for each retry
    actually sent; `try_retry()` does the check and the record together.
    """

    def __init__(self, config: RetryBudgetConfig, clock: Clock) -> None:
        self._config = config
        self._clock = clock
        self._requests = TimeWindow(config.window_s)
        self._retries = TimeWindow(config.window_s)
        self.refused = 0

    def record_request(self) -> None:
        self._requests.add(self._clock.now(), failed=False)

    def record_retry(self) -> None:
        self._retries.add(self._clock.now(), failed=False)

    def can_retry(self) -> bool:
        now = self._clock.now()
        return retry_allowed(self._requests.counts(now).total, self._retries.counts(now).total, self._config)

    def try_retry(self) -> bool:
        if not self.can_retry():
            self.refused += 1
            return False
        self.record_retry()
        return True

    def backoff_s(
        self, attempt: int, deadline_remaining_s: float | None, *, jitter: float | None = None
    ) -> float | None:
        return backoff_delay_s(
            attempt,
            self._config.backoff_base_s,
            self._config.backoff_max_s,
            deadline_remaining_s,
            jitter=jitter,
        )


def backoff_delay_s(
    attempt: int,
    base_s: float,
    max_s: float,
    deadline_remaining_s: float | None,
    *,
    jitter: float | None = None,
    min_attempt_s: float = 0.0,
) -> float | None:
    """Delay before retry number `attempt` (1 = first retry), or None when the deadline leaves no room.

    Exponential from `base_s`, capped at `max_s`. `jitter` in [0, 1] (the caller's random draw, which keeps this
    pure) picks a delay in [d/2, d] ("equal jitter": spread out, but never a zero-delay stampede).
    `min_attempt_s` is what the retry itself needs to be worth sending before the deadline.
    """
    if attempt < 1:
        raise ValueError("attempt is 1-based")
    delay = min(max_s, base_s * 2.0 ** (attempt - 1))
    if jitter is not None:
        delay = delay / 2 + delay / 2 * min(1.0, max(0.0, jitter))
    if deadline_remaining_s is not None and delay + min_attempt_s >= deadline_remaining_s:
        return None
    return delay
