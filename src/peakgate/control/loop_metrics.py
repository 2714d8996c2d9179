"""The autoscaler's own metrics, on a registry it owns (no global registry), served on `autoscale.metrics_port`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

_STARTUP_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)


class AutoscaleMetrics:
    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = r = registry or CollectorRegistry()
        self.decisions = Counter("peakgate_autoscale_decisions_total",
                                 "Scaling decisions, by policy and the rule (level) that fired", ["policy", "rule"],
                                 registry=r)
        self.desired = Gauge("peakgate_autoscale_desired_replicas", "Serving replicas asked for (after clamps)",
                             registry=r)
        self.replicas = Gauge("peakgate_autoscale_replicas", "Replicas by state, as the provider reports them",
                              ["state"], registry=r)
        self.warm_target = Gauge("peakgate_autoscale_warm_target", "Standby workers the warm pool is sized to",
                                 registry=r)
        self.startup = Histogram("peakgate_autoscale_startup_seconds",
                                 "Decision to first request served: cold start or warm promotion", ["kind"],
                                 buckets=_STARTUP_BUCKETS_S, registry=r)
        self.events = Counter("peakgate_autoscale_replica_events_total", "Provider and warm pool lifecycle events",
                              ["kind"], registry=r)
        self.errors = Counter("peakgate_autoscale_errors_total", "Ticks cut short, by the stage that failed",
                              ["stage"], registry=r)
        self.signal = Gauge("peakgate_autoscale_signal", "The last snapshot's signals", ["name"], registry=r)
