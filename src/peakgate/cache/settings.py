"""Cache settings; the lead hooks `CacheConfig` into `Settings`."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

CacheBackend = Literal["memory", "redis"]


class CacheConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True  # off: every miss goes to the TM and engines (benchmarks of scheduling, debugging)
    backend: CacheBackend = "memory"  # "redis" puts a shared L2 behind the in-process L1
    ttl_s: float = Field(default=86_400.0, gt=0)
    l1_max_entries: int = Field(default=100_000, ge=1)
    l1_max_bytes: int = Field(default=256 * 1024 * 1024, ge=1)
    l1_ttl_s: float | None = None  # defaults to ttl_s; shorter keeps L1 closer to a shared L2
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_key_prefix: str = "pg:tc:"
    redis_socket_timeout_s: float = Field(default=0.05, gt=0)
    redis_backoff_initial_s: float = Field(default=0.5, gt=0)
    redis_backoff_max_s: float = Field(default=30.0, gt=0)
    casefold: bool = True  # share entries across first-letter / ALL CAPS variants, re-cased on a hit
    strip_punct: bool = True  # share entries across a final "." / "…" or none, re-punctuated on a hit
    tenant_isolation: bool = True
