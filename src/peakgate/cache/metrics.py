"""Cache counters, registered on the registry the service owns (no global registry)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter


class CacheMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.hits = Counter("peakgate_cache_hits_total", "Cache hits", ["layer"], registry=registry)
        self.misses = Counter("peakgate_cache_misses_total", "Cache misses", ["layer"], registry=registry)
        self.evictions = Counter("peakgate_cache_evictions_total", "Entries dropped before being read again",
                                 ["layer", "reason"], registry=registry)
        self.errors = Counter("peakgate_cache_errors_total", "Cache backend failures, served as misses",
                              ["layer", "kind"], registry=registry)
        self.single_flight = Counter("peakgate_cache_single_flight_total",
                                     "Misses served by another request's in-flight fill", registry=registry)
