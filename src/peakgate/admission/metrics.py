"""Shared-admission metrics, registered on the registry the service owns (no global registry)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class AdmissionMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.fallback = Gauge("peakgate_admission_fallback",
                              "1 while this gateway decides admission alone, at fallback_share, because the shared "
                              "Redis is out of reach", registry=registry)
        self.fallback_decisions = Counter("peakgate_admission_fallback_decisions_total",
                                          "Admission operations answered by the local fallback", ["op"],
                                          registry=registry)
        self.redis_errors = Counter("peakgate_admission_redis_errors_total",
                                    "Failed calls to the shared admission Redis", registry=registry)
