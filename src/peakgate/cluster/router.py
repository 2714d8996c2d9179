"""The routing state between requests: in-flight counts per gateway and sticky tenants; it builds the frozen
views `policy.choose` decides on and applies what it decides.

The load signal. A gateway's `/metrics` has no utilisation figure to read: `peakgate_queue_length` counts
waiting segments per model with no capacity to divide it by, and scraping and parsing Prometheus text every
interval would give a figure an interval old. So a cluster's load is measured here: the requests this router
has open to the cluster's ready gateways over their configured `max_inflight` (the concurrency at which the
operator calls a gateway full). It is exact and current at every request and needs no gateway change. What
it cannot see (traffic sent around this router, other routers) the gateway reports itself: its `/readyz`
answers 503 when interactive requests wait past their deadline, and a gateway that is not ready counts as
full (load 1.0) from the next health check on.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from peakgate.cluster.config import ClusterConfig
from peakgate.cluster.health import Check, HealthChecker
from peakgate.cluster.metrics import RouterMetrics
from peakgate.cluster.policy import (
    ClusterView,
    NoRoute,
    Route,
    RouteContext,
    UpstreamView,
    choose,
    cluster_health,
    pick_upstream,
)


@dataclass(frozen=True, slots=True)
class Lease:
    """A request's place on one gateway: hand it back with `ClusterRouter.release`."""

    route: Route
    url: str


class ClusterRouter:
    def __init__(self, config: ClusterConfig, health: HealthChecker, metrics: RouterMetrics) -> None:
        self._config = config
        self._health = health
        self._metrics = metrics
        self._upstreams = {spec.name: spec.upstreams for spec in config.clusters}
        self._spill_order = {spec.name: config.spill_order(spec.name) for spec in config.clusters}
        self._inflight = {u.url: 0 for spec in config.clusters for u in spec.upstreams}
        self._sticky: OrderedDict[str, str] = OrderedDict()  # tenant -> cluster, least recently used first
        self._turn = 0

    def take(self, preferred: str, tenant: str | None, avoid: str | None = None) -> Lease | NoRoute:
        """Decide where the request goes and count it in flight there; `avoid` (a gateway that just refused
        the connection) counts as down for this decision."""
        key = tenant if self._config.sticky_tenants else None
        sticky = self._sticky.get(key) if key is not None else None
        context = RouteContext(self.views(avoid), preferred, self._config.spill_load, self._config.health_interval_s)
        decision, kept = choose(context, sticky)
        if isinstance(decision, NoRoute):
            self._metrics.requests.labels("none", "no_cluster").inc()
            return decision
        if key is not None and kept is not None:
            self._remember(key, kept)
        index = pick_upstream(self._upstream_views(decision.cluster, avoid), self._turn)
        assert index is not None  # the policy only picks a cluster with a gateway up
        self._turn += 1
        url = self._upstreams[decision.cluster][index].url
        self._inflight[url] += 1
        return Lease(decision, url)

    def release(self, lease: Lease, outcome: str) -> None:
        """The request is over: `outcome` is the gateway's status class, or why it gave none."""
        self._inflight[lease.url] -= 1
        route = lease.route
        self._metrics.requests.labels(route.cluster, outcome).inc()
        if route.spilled_from is not None:
            self._metrics.spills.labels(route.spilled_from, route.cluster).inc()

    def unreachable(self, url: str) -> None:
        """The proxy could not connect: as good as a failed health check."""
        self._health.record(url, Check(alive=False, ready=False))

    def views(self, avoid: str | None = None) -> dict[str, ClusterView]:
        views = {}
        for name in self._upstreams:
            healthy, load = cluster_health(self._upstream_views(name, avoid))
            views[name] = ClusterView(name, healthy, load, self._spill_order[name])
        return views

    def ready(self) -> bool:
        return any(view.healthy for view in self.views().values())

    def publish(self) -> None:
        """Bring the gauges up to date (before each scrape)."""
        for name, view in self.views().items():
            self._metrics.cluster_healthy.labels(name).set(1.0 if view.healthy else 0.0)
            self._metrics.cluster_load.labels(name).set(view.load)
            for upstream in self._upstreams[name]:
                up = self._health.health(upstream.url).up
                self._metrics.upstream_up.labels(name, upstream.url).set(1.0 if up else 0.0)

    def _upstream_views(self, cluster: str, avoid: str | None = None) -> list[UpstreamView]:
        views = []
        for upstream in self._upstreams[cluster]:
            health = self._health.health(upstream.url)
            up = health.up and upstream.url != avoid
            views.append(UpstreamView(up, health.ready, self._inflight[upstream.url], upstream.max_inflight))
        return views

    def _remember(self, tenant: str, cluster: str) -> None:
        self._sticky[tenant] = cluster
        self._sticky.move_to_end(tenant)
        if len(self._sticky) > self._config.sticky_max_tenants:
            self._sticky.popitem(last=False)
