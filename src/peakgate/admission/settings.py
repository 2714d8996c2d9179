"""Admission settings; `Settings.admission` holds one `AdmissionConfig`.

`backend = "local"` (the default) keeps buckets and quotas in the process: each gateway limits on its own and
quotas restart with it. `"redis"` keeps them in one Redis that every gateway shares (`peakgate.admission.shared`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

AdmissionBackendKind = Literal["local", "redis"]


class AdmissionConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    backend: AdmissionBackendKind = "local"
    redis_url: str = "redis://127.0.0.1:6379/0"
    redis_key_prefix: str = "pg:adm:"
    # Every admission decision is one Redis round trip on the request path: a slow Redis must fail fast into
    # the fallback, not stall requests (no client-side retries either).
    redis_socket_timeout_s: float = Field(default=0.1, gt=0)
    # While Redis is out of reach each gateway limits alone at this share of every configured rate and burst.
    # Conservative: with N gateways they let through N x share of the cluster's rate (1/N is exact).
    fallback_share: float = Field(default=0.5, gt=0, le=1)
    retry_redis_s: float = Field(default=1.0, gt=0)  # during an outage, Redis is tried at most this often
