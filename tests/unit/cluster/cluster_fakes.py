"""The seed cluster map (华东 → shanghai, 华南 → guangzhou, else beijing) over fake gateway URLs."""

from __future__ import annotations

from typing import Any

from peakgate.cluster.config import ClusterConfig

SHANGHAI, GUANGZHOU, BEIJING = "http://sh.test:8080", "http://gz.test:8080", "http://bj.test:8080"


def seed(**overrides: Any) -> ClusterConfig:
    """The seed map, one gateway per cluster (`max_inflight` 2 in shanghai), fields overridable."""
    data: dict[str, Any] = {
        "clusters": [
            {"name": "shanghai", "regions": ["华东"], "ip_ranges": ["10.1.0.0/16"],
             "upstreams": [{"url": SHANGHAI, "max_inflight": 2}]},
            {"name": "guangzhou", "regions": ["华南"], "ip_ranges": ["10.2.0.0/16", "10.1.9.0/24"],
             "upstreams": [{"url": GUANGZHOU}]},
            {"name": "beijing", "upstreams": [{"url": BEIJING}]},
        ],
        "health_interval_s": 2.0,
    }
    return ClusterConfig.model_validate(data | overrides)
