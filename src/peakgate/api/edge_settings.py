"""Edge caching policy for `GET /v1/translate`: one default plus per-tenant overrides (docs/edge-caching.md)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

# What a response to a request made with an API key may say to caches: nothing stored, the caller's own
# (browser or HTTP client) cache only, or shared caches (a CDN) too, one variant per key.
PrivateKeyCaching = Literal["no-store", "browser", "shared"]


class EdgeCacheConfig(BaseModel):
    """How one tenant's cacheable translations may be kept by browsers and CDNs."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True  # false: every answer says `no-store`
    max_age_s: int = Field(default=3600, ge=0)
    shared_max_age_s: int | None = Field(default=None, ge=0)  # s-maxage; None: shared caches use max_age_s
    stale_while_revalidate_s: int = Field(default=60, ge=0)  # 0: not sent
    # Open dev mode has no keys (every caller is anonymous): its answers are public. With keys configured,
    # the tenant chooses; "no-store" keeps the rule: never cacheable with a private key unless allowed.
    private_keys: PrivateKeyCaching = "no-store"
    allow_pii: bool = False  # false: text holding PII (any kind peakgate detects) answers `no-store`


class EdgeCachePolicy(BaseModel):
    """`default` applies to every tenant not named in `tenants` (an override replaces it whole)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    # The whole query string; longer texts go by POST. CDNs cap URLs near 8 KiB (CloudFront: 8192 bytes).
    max_query_bytes: int = Field(default=8192, gt=0)
    default: EdgeCacheConfig = Field(default_factory=EdgeCacheConfig)
    tenants: Mapping[str, EdgeCacheConfig] = Field(default_factory=dict)

    def config_for(self, tenant: str) -> EdgeCacheConfig:
        return self.tenants.get(tenant, self.default)
