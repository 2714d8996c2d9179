"""The `[cluster]` section read by `peakgate route`: clusters of gateways, how a request picks one, when it spills.

Seed (as issue 20 set it): `华东` → shanghai, `华南` → guangzhou, anything else → `default_cluster` (beijing);
traffic spills at 85 % load.

```toml
[[cluster.clusters]]
name = "shanghai"
regions = ["华东"]
ip_ranges = ["10.1.0.0/16"]
fallbacks = ["guangzhou", "beijing"]
upstreams = [{ url = "http://10.1.0.5:8080", max_inflight = 64 }]
```
"""

from __future__ import annotations

import re
import unicodedata

from pydantic import BaseModel, ConfigDict, Field, IPvAnyNetwork, field_validator, model_validator

# Cluster names go into a response header and metric labels: keep them to plain tokens.
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def region_key(text: str) -> str:
    """How region tags compare: Unicode-normalised, trimmed, case-insensitive."""
    return unicodedata.normalize("NFC", text).strip().casefold()


class UpstreamConfig(_Frozen):
    """One gateway (`peakgate serve`) of a cluster."""

    url: str
    # The requests this router may keep open to the gateway at full load: the denominator of the cluster's load
    # figure (see `peakgate.cluster.router` for why the figure is measured here, not read from the gateway).
    max_inflight: int = Field(default=64, ge=1)

    @field_validator("url")
    @classmethod
    def _http_base(cls, value: str) -> str:
        if not value.startswith(("http://", "https://")):
            raise ValueError(f"upstream url {value!r} must start with http:// or https://")
        return value.rstrip("/")


class ClusterSpec(_Frozen):
    name: str
    upstreams: tuple[UpstreamConfig, ...] = Field(min_length=1)
    regions: tuple[str, ...] = ()  # region-header values that pick this cluster (its name always does)
    ip_ranges: tuple[IPvAnyNetwork, ...] = ()  # clients whose address falls here prefer this cluster
    fallbacks: tuple[str, ...] | None = None  # where its traffic spills, in order; None: every other cluster

    @field_validator("name")
    @classmethod
    def _token(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError(f"cluster name {value!r} must be letters, digits, '.', '_' or '-'")
        return value


class ClusterConfig(_Frozen):
    host: str = "127.0.0.1"
    port: int = 8090
    clusters: tuple[ClusterSpec, ...] = Field(min_length=1)
    default_cluster: str = "beijing"  # for requests neither the header nor the client's address place
    region_header: str = "X-Peakgate-Region"
    # A cluster at or past this load takes no new preferred traffic while one of its fallbacks is under it.
    spill_load: float = Field(default=0.85, gt=0, le=1)
    health_interval_s: float = Field(default=1.0, gt=0)
    health_timeout_s: float = Field(default=0.5, gt=0)
    failures_before_down: int = Field(default=2, ge=1)
    successes_before_up: int = Field(default=2, ge=1)
    # A tenant (a hash of its API key) stays on the cluster that served it while that one is healthy and
    # under `spill_load`, even once its preferred cluster is back; at most `sticky_max_tenants` remembered.
    sticky_tenants: bool = False
    sticky_max_tenants: int = Field(default=100_000, ge=1)
    connect_timeout_s: float = Field(default=1.0, gt=0)
    upstream_timeout_s: float = Field(default=60.0, gt=0)  # the longest silence while reading or writing

    @model_validator(mode="after")
    def _check_names(self) -> ClusterConfig:
        names = [c.name for c in self.clusters]
        if len(set(names)) != len(names):
            raise ValueError(f"cluster names must be unique: {names}")
        if self.default_cluster not in names:
            raise ValueError(f"default_cluster {self.default_cluster!r} is not a configured cluster {names}")
        for spec in self.clusters:
            order = self.spill_order(spec.name)
            unknown = [n for n in order if n not in names or n == spec.name]
            if unknown or len(set(order)) != len(order):
                raise ValueError(f"cluster {spec.name!r}: fallbacks {list(order)} must name other clusters, once each")
        tags = [region_key(tag) for spec in self.clusters for tag in (spec.name, *spec.regions)]
        if len(set(tags)) != len(tags):
            raise ValueError("a region tag (or cluster name) picks more than one cluster")
        return self

    def spill_order(self, name: str) -> tuple[str, ...]:
        spec = next(c for c in self.clusters if c.name == name)
        if spec.fallbacks is not None:
            return spec.fallbacks
        return tuple(c.name for c in self.clusters if c.name != name)
