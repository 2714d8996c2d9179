"""Resilience configuration: one frozen pydantic model per mechanism, units in the field names."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class BreakerConfig(_Frozen):
    """Circuit breaker per backend or replica.

    Trips (closed -> open) when, over the sliding window, the error rate reaches `error_rate_threshold` with at
    least `min_requests` outcomes, or when `consecutive_timeouts` timeouts arrive in a row. Stays open for
    `open_s`, multiplied by `open_backoff_factor` on each trip without a successful close in between, up to
    `max_open_s`. Half-open lets `half_open_probes` calls through; that many successes close it, any failure
    re-opens it.
    """

    window_kind: Literal["count", "time"] = "time"
    window_size: int = Field(default=100, ge=1)  # outcomes, for a count window
    window_s: float = Field(default=10.0, gt=0)  # seconds, for a time window
    error_rate_threshold: float = Field(default=0.5, gt=0, le=1)
    min_requests: int = Field(default=20, ge=1)
    consecutive_timeouts: int = Field(default=5, ge=1)
    slow_call_s: float | None = Field(default=None, gt=0)  # a success slower than this counts as a timeout
    open_s: float = Field(default=5.0, gt=0)
    open_backoff_factor: float = Field(default=2.0, ge=1)
    max_open_s: float = Field(default=60.0, gt=0)
    half_open_probes: int = Field(default=3, ge=1)

    @model_validator(mode="after")
    def _check_open(self) -> BreakerConfig:
        if self.max_open_s < self.open_s:
            raise ValueError("max_open_s must be >= open_s")
        if self.window_kind == "count" and self.min_requests > self.window_size:
            raise ValueError("min_requests > window_size: a count window could never trip on error rate")
        return self


class OutlierConfig(_Frozen):
    """Outlier ejection over a set of replicas of one model (Envoy style).

    A replica is ejected when its error rate over `window_s` is at least `error_rate_threshold` and at least
    `median_factor` times the median of the other replicas' rates, with `min_requests` outcomes. It stays out
    for `ejection_s` times the number of times it has been ejected, up to `max_ejection_s`. At most
    `max_ejection_percent` of the replicas are out at once, but the first ejection is always allowed (Envoy's
    rule) and one replica always stays; 0 turns ejection off. Wired for Apertium's pipelines.
    """

    window_s: float = Field(default=30.0, gt=0)
    min_requests: int = Field(default=10, ge=1)
    error_rate_threshold: float = Field(default=0.3, gt=0, le=1)
    median_factor: float = Field(default=3.0, ge=1)
    ejection_s: float = Field(default=30.0, gt=0)
    max_ejection_s: float = Field(default=300.0, gt=0)
    max_ejection_percent: float = Field(default=34.0, ge=0, le=100)


class RetryBudgetConfig(_Frozen):
    """Retry budget (Finagle/Envoy): retries <= `ratio` x requests + `min_retries_per_s` x `window_s`."""

    ratio: float = Field(default=0.2, ge=0)
    min_retries_per_s: float = Field(default=1.0, ge=0)
    window_s: float = Field(default=10.0, gt=0)
    backoff_base_s: float = Field(default=0.05, gt=0)
    backoff_max_s: float = Field(default=2.0, gt=0)


class ConcurrencyConfig(_Frozen):
    """Adaptive concurrency limit (Netflix Gradient2).

    `long_window` and `short_window` are EWMA spans in samples. `queue_size` None means sqrt(limit), the
    headroom Gradient2 adds so that the limit can probe upwards. A dropped (timed-out) call multiplies the limit
    by `drop_factor`.
    """

    initial_limit: int = Field(default=20, ge=1)
    min_limit: int = Field(default=4, ge=1)
    max_limit: int = Field(default=200, ge=1)
    rtt_tolerance: float = Field(default=1.5, ge=1)
    long_window: int = Field(default=600, ge=1)
    short_window: int = Field(default=10, ge=1)
    smoothing: float = Field(default=0.2, gt=0, le=1)
    queue_size: int | None = Field(default=None, ge=0)
    drop_factor: float = Field(default=0.9, gt=0, le=1)
    reject_retry_after_s: float = Field(default=1.0, gt=0)

    @model_validator(mode="after")
    def _check_limits(self) -> ConcurrencyConfig:
        if not self.min_limit <= self.initial_limit <= self.max_limit:
            raise ValueError("need min_limit <= initial_limit <= max_limit")
        return self


class SheddingConfig(_Frozen):
    """Priority load shedding (SRE criticality: interactive > document > batch).

    A lower class is shed once the interactive class's predicted wait reaches the given fraction of its
    `max_queue_wait_ms`; any class is shed when its own predicted wait exceeds its budget, and interactive only
    when its predicted wait plus service time would pass its deadline. A shed request whose client holds at least
    `client_share_for_429` of the backlog gets 429 (its own doing), otherwise 503.

    A document or batch request is also shed when its predicted wait plus service would pass
    `deadline_headroom` of its deadline (its own, when tighter than its class's): the prediction runs short
    when costlier work (beam search) or more critical arrivals get ahead, and a queue that settles at the
    deadline itself misses it for every request the estimate got wrong.

    Recovery: observed waits fade with `wait_half_life_s` once no request is served, and a class refused for
    `probe_interval_s` with nothing queued admits one request as a probe (a breaker's half-open), so fresh
    evidence replaces stale.
    """

    batch_protect_fraction: float = Field(default=0.5, gt=0)
    deadline_headroom: float = Field(default=0.6, gt=0, le=1)
    document_protect_fraction: float = Field(default=0.8, gt=0)
    client_share_for_429: float = Field(default=0.5, gt=0, le=1)
    min_retry_after_s: float = Field(default=1.0, gt=0)
    max_retry_after_s: float = Field(default=300.0, gt=0)
    wait_half_life_s: float = Field(default=2.0, gt=0)
    probe_interval_s: float = Field(default=1.0, gt=0)


class LadderConfig(_Frozen):
    """Degradation ladder with hysteresis.

    The ladder climbs one level when the SLO burn rate or the p95 queue wait stays at or above its `enter` value
    for `enter_for_s`, and descends one level when both stay below their `exit` values for `exit_for_s`. Each
    level is held at least `min_dwell_s`. Pinned tenants keep their tier at L3.
    """

    burn_rate_enter: float = Field(default=6.0, gt=0)
    burn_rate_exit: float = Field(default=2.0, ge=0)
    queue_wait_enter_ms: float = Field(default=400.0, gt=0)
    queue_wait_exit_ms: float = Field(default=100.0, ge=0)
    # Climb fast, descend more slowly: a holiday surge arrives in minutes, so each step up needs only a few
    # seconds of sustained pressure; stepping down needs a quiet spell under the lower exit thresholds, short
    # enough that the whole ladder is walked down in under a minute once the surge has passed.
    enter_for_s: float = Field(default=3.0, ge=0)
    exit_for_s: float = Field(default=5.0, ge=0)
    min_dwell_s: float = Field(default=5.0, ge=0)
    max_level: int = Field(default=4, ge=0, le=4)  # 4 = CACHE_ONLY; 3 stops at L3
    light_tier: str = "tiny"
    l1_beam_cap: int = Field(default=1, ge=1)
    tick_s: float = Field(default=1.0, gt=0)

    @model_validator(mode="after")
    def _check_hysteresis(self) -> LadderConfig:
        if self.burn_rate_exit >= self.burn_rate_enter or self.queue_wait_exit_ms >= self.queue_wait_enter_ms:
            raise ValueError("exit thresholds must be below enter thresholds, or the ladder flaps")
        return self


class ResilienceConfig(_Frozen):
    # The SLO the ladder defends: this share of requests answered within their class deadline, measured over
    # `slo_window_s`; burn rate 1.0 spends the error budget exactly, the ladder climbs at `burn_rate_enter`.
    slo_target: float = Field(default=0.99, gt=0, lt=1)
    slo_window_s: float = Field(default=60.0, gt=0)
    slo_short_window_s: float = Field(default=5.0, gt=0)  # the multiwindow's short one: climbing needs both
    slo_min_requests: int = Field(default=20, ge=1)
    breaker: BreakerConfig = BreakerConfig()
    outlier: OutlierConfig = OutlierConfig()
    retry: RetryBudgetConfig = RetryBudgetConfig()
    concurrency: ConcurrencyConfig = ConcurrencyConfig()
    shedding: SheddingConfig = SheddingConfig()
    ladder: LadderConfig = LadderConfig()
