"""The gateway's scale-out metrics, registered on the registry the service owns (no global registry).

Workers export theirs in their heartbeats (`cluster.Counts`): they serve no HTTP.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge


class QueueMetrics:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.replies_dropped = Counter(
            "peakgate_queue_replies_dropped_total",
            "Worker replies dropped: for a request already answered or given up (unmatched), or unreadable",
            ["reason"], registry=registry)
        self.unreachable = Counter("peakgate_queue_unreachable_total",
                                   "Requests the shared queue could not take or answer (Redis down or no worker)",
                                   ["model", "why"], registry=registry)
        self.local_fallbacks = Counter("peakgate_queue_local_fallbacks_total",
                                       "Requests run on this gateway's engines because the shared queue was out "
                                       "of reach", ["model"], registry=registry)
        self.workers_ready = Gauge("peakgate_queue_workers_ready", "Ready workers per model, from their heartbeats",
                                   ["model"], registry=registry)
        self.waiting = Gauge("peakgate_queue_waiting", "Requests sent to workers and not yet answered",
                             registry=registry)
