"""Work-queue settings; `Settings.queue` holds one `QueueConfig`.

`backend = "inprocess"` is the embedded default: today's scheduler, nothing else needed. `"redis"` puts the
queue in Redis Streams, served by `peakgate worker` processes (see `peakgate.scaleout`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

QueueBackend = Literal["inprocess", "redis"]
# What a gateway does when Redis or every worker of a model is out of reach: answer 503 + Retry-After, or run
# the request on its own engines (which `peakgate serve` loads anyway).
QueueFallback = Literal["none", "local"]


class QueueConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: QueueBackend = "inprocess"
    redis_url: str = "redis://127.0.0.1:6379/0"
    stream_prefix: str = "pg"  # keys: {prefix}:q:{model}:{class}, {prefix}:r:{gateway}, {prefix}:w:{worker}
    group: str = "workers"  # the consumer group every worker of a stream joins
    # A pending entry idle this long belongs to a worker presumed dead: another one reclaims it (XAUTOCLAIM).
    # Live workers refresh the entries they hold every heartbeat, so only a dead one's entries go idle. Kept
    # well inside the interactive deadline (3 s): a killed worker's interactive work runs again in time.
    claim_idle_ms: int = Field(default=1_500, gt=0)
    heartbeat_s: float = Field(default=0.5, gt=0)  # worker heartbeat, lease refresh and reclaim period
    heartbeat_misses: int = Field(default=3, ge=2)  # a heartbeat key expires after this many missed beats
    read_block_ms: int = Field(default=250, gt=0)  # longest blocking read: bounds how soon a stop is noticed
    socket_timeout_ms: int = Field(default=1_000, gt=0)  # any Redis call slower than this fails (never hang)
    # Work a worker holds (read, not yet answered), in full batches per batch it runs at once: enough to form
    # the next batches while these run, little enough that the rest stays in Redis for idle workers to take.
    prefetch_batches: int = Field(default=2, ge=1)
    reply_max_len: int = Field(default=10_000, ge=100)  # replies kept per gateway stream (approximate trim)
    reply_ttl_s: float = Field(default=60.0, gt=0)  # a gone gateway's reply stream expires after this
    backoff_initial_s: float = Field(default=0.5, gt=0)  # after a Redis failure, fail fast this long, doubling
    backoff_max_s: float = Field(default=5.0, gt=0)
    fallback: QueueFallback = "none"
    # Each `peakgate worker` serves its own /metrics here when set (`--metrics-port` overrides; 0 picks a free
    # port, logged): Kubernetes gives every pod its own address, several workers on one host need their own ports.
    worker_metrics_port: int | None = Field(default=None, ge=0, le=65_535)
    worker_metrics_host: str = "127.0.0.1"

    @property
    def heartbeat_ttl_ms(self) -> int:
        return round(self.heartbeat_s * self.heartbeat_misses * 1000)

    @model_validator(mode="after")
    def _check_periods(self) -> QueueConfig:
        # A live worker refreshes its leases once per heartbeat: two must fit in the idle time, or a slow beat
        # would let another worker reclaim (and run twice) what a live one holds.
        if self.heartbeat_s * 2000 > self.claim_idle_ms:
            raise ValueError(f"claim_idle_ms ({self.claim_idle_ms}) must be at least two heartbeats "
                             f"({self.heartbeat_s * 2000:.0f} ms)")
        if self.read_block_ms >= self.socket_timeout_ms:
            raise ValueError("read_block_ms must be below socket_timeout_ms: a blocking read would time out")
        return self
