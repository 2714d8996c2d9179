"""The router's metrics, on a registry it owns (no global registry), served at its own `/metrics`."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, generate_latest


class RouterMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "peakgate_router_requests_total",
            "Requests by the cluster that took them and outcome: the gateway's status class (2xx...), "
            "upstream_error (no answer from it), or no_cluster (refused here, cluster 'none'); a request retried "
            "after a refused connection counts once per try",
            ["cluster", "outcome"], registry=r)
        self.spills = Counter("peakgate_router_spills_total",
                              "Requests served by another cluster than their preferred one", ["from", "to"],
                              registry=r)
        self.cluster_healthy = Gauge("peakgate_router_cluster_healthy", "1 while a gateway of the cluster is up",
                                     ["cluster"], registry=r)
        self.cluster_load = Gauge("peakgate_router_cluster_load",
                                  "Requests in flight to the cluster's ready gateways over their max_inflight "
                                  "(1 when none is ready)", ["cluster"], registry=r)
        self.upstream_up = Gauge("peakgate_router_upstream_up", "1 while health checks find the gateway up",
                                 ["cluster", "upstream"], registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)
