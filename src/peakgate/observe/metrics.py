"""Every metric peakgate exports, on a registry owned by the service (no global registry)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, ProcessCollector, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from peakgate.observe.gpu import GpuCollector
from peakgate.observe.slo import SloReading

_LATENCY_BUCKETS_S = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
_BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128)
_MEDIA_BUCKETS_S = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0)
OTHER = "other"
# The API route serving the work in this context (its template, e.g. "/v2/translate"), for the `endpoint` label
# of engine work: set where a request enters (and by the job runner's tasks); tasks a request spawns inherit it.
SERVING_ENDPOINT: ContextVar[str] = ContextVar("peakgate_serving_endpoint", default=OTHER)
# The tenant a request authenticated as, for the `tenant` label of its HTTP outcome: set by admission, read where
# the request leaves. Bounded: tenants come only from configured keys (or the open mode's anonymous one).
NO_TENANT = "none"  # the request never authenticated (a 401, a bad body, /healthz)
SERVING_TENANT: ContextVar[str] = ContextVar("peakgate_serving_tenant", default=NO_TENANT)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter("peakgate_requests_total", "HTTP requests", ["endpoint", "tier", "status"], registry=r)
        self.tenant_requests = Counter("peakgate_tenant_requests_total", "HTTP requests per tenant",
                                       ["tenant", "endpoint", "status"], registry=r)
        self.request_latency = Histogram(
            "peakgate_request_latency_seconds", "HTTP request latency", ["endpoint", "tier"],
            buckets=_LATENCY_BUCKETS_S, registry=r,
        )
        self.queue_length = Gauge("peakgate_queue_length", "Segments waiting per model", ["model"], registry=r)
        self.queue_wait = Histogram(
            "peakgate_queue_wait_seconds", "Time a segment waited before its batch ran", ["model", "priority"],
            buckets=_LATENCY_BUCKETS_S, registry=r,
        )
        self.batch_size = Histogram(
            "peakgate_batch_size", "Segments per executed batch", ["model"], buckets=_BATCH_BUCKETS, registry=r
        )
        self.coalesced = Counter("peakgate_coalesced_total", "Segments served by an identical in-flight one",
                                 ["model"], registry=r)
        self.model_busy = Counter("peakgate_model_busy_seconds_total", "Time each model spent running batches",
                                  ["model"], registry=r)
        self.dropped = Counter("peakgate_dropped_total", "Segments dropped from queues", ["model", "reason"],
                               registry=r)
        self.rejected = Counter("peakgate_rejected_total", "Requests refused by admission", ["reason", "priority"],
                                registry=r)
        self.shed_probes = Counter("peakgate_shed_probes_total",
                                   "Requests let through as probes after a class was refused for a probe interval",
                                   ["priority"], registry=r)
        self.backend_errors = Counter("peakgate_backend_errors_total", "Engine failures", ["model", "kind"],
                                      registry=r)
        self.segments_served = Counter(
            "peakgate_segments_served_total", "Segments by what served them: engine, cache, tm_exact, tm_repaired",
            ["origin"], registry=r,
        )
        self.breaker_state = Gauge("peakgate_breaker_state", "Circuit breaker per model: 0 closed, 1 half-open, 2 open",
                                   ["model"], registry=r)
        self.breaker_transitions = Counter("peakgate_breaker_transitions_total", "Breaker state changes",
                                           ["model", "to"], registry=r)
        self.degradation_level = Gauge("peakgate_degradation_level",
                                       "Degradation ladder: 0 normal, 1 features off, 2 int8, 3 tiny, 4 cache-only "
                                       "batch", registry=r)
        self.ejections = Counter("peakgate_outlier_ejections_total", "Replicas taken out by outlier ejection",
                                 ["model", "replica"], registry=r)
        self.qe_fallbacks = Counter("peakgate_qe_fallbacks_total",
                                    "Segments re-translated by the next engine after failing quality estimation, by "
                                    "the first engine and its first failed check", ["model", "reason"], registry=r)
        self.qe_served = Counter("peakgate_qe_served_total",
                                 "Re-translated segments by the candidate served: the first engine's (primary) or "
                                 "the next engine's (fallback)", ["model", "candidate"], registry=r)
        self.fallbacks = Counter("peakgate_fallbacks_total", "Requests routed past an unhealthy model",
                                 ["tier", "model"], registry=r)
        self.pivots = Counter("peakgate_pivot_total", "Requests translated in two hops through a pivot language",
                              ["source", "target", "pivot"], registry=r)
        self.engine_characters = Counter(
            "peakgate_engine_characters_total",
            "Source characters translated by an engine (not cache or TM hits), the autoscaler's cost attribution",
            ["model", "tier", "tenant", "endpoint"], registry=r,
        )
        self._observe_classes_and_slos(r)
        self._observe_media(r)
        # RSS, CPU seconds, open and max file descriptors, start time (`process_*`), read from /proc at scrape.
        ProcessCollector(registry=r)
        r.register(GpuCollector())

    def _observe_classes_and_slos(self, r: CollectorRegistry) -> None:
        self.class_requests = Counter(
            "peakgate_class_requests_total",
            "Requests per priority class through the overload guard, by outcome: served, shed (refused or failed "
            "for overload), error (engine or internal failure)", ["class", "outcome"], registry=r,
        )
        self.class_latency = Histogram(
            "peakgate_class_latency_seconds", "Latency of served requests per priority class, from the overload "
            "guard's door to the answer", ["class"], buckets=_LATENCY_BUCKETS_S, registry=r,
        )
        self.slo_events = Counter("peakgate_slo_events_total", "Events counted against each SLO, good or bad",
                                  ["slo", "outcome"], registry=r)
        self.slo_gauges = SloGauges()
        r.register(self.slo_gauges)

    def _observe_media(self, r: CollectorRegistry) -> None:
        # The media pool's (`media.pool`): here, so every app built over one service's metrics counts into them.
        self.media_queued = Gauge("peakgate_media_queued_units", "Media work waiting or running: megapixels (ocr) "
                                  "or audio seconds (asr)", ["kind"], registry=r)
        self.media_running = Gauge("peakgate_media_running", "Media tasks running in the pool", ["kind"], registry=r)
        self.media_seconds = Histogram("peakgate_media_seconds", "Time a media task ran in the pool", ["kind"],
                                       buckets=_MEDIA_BUCKETS_S, registry=r)
        self.media_refused = Counter("peakgate_media_refused_total", "Media work refused: queue_full (the kind's "
                                     "units cap), feature_off (the ladder turned an extra off)", ["kind", "reason"],
                                     registry=r)

    def render(self) -> bytes:
        return generate_latest(self.registry)


class SloGauges(Collector):
    """`peakgate_slo_objective{slo}`, `peakgate_slo_burn_rate{slo,window}`, `peakgate_slo_error_budget_remaining
    {slo}` and `peakgate_slo_alert{slo,severity}`, read from the attached SLO trackers at each scrape (so the
    windows are evaluated at the scrape's now, with no timer keeping gauges fresh)."""

    def __init__(self) -> None:
        self._source: Callable[[], Iterable[SloReading]] = tuple

    def attach(self, source: Callable[[], Iterable[SloReading]]) -> None:
        self._source = source

    def describe(self) -> list[Metric]:
        return []  # registered before any SLO is attached: no names to reserve

    def collect(self) -> Iterator[Metric]:
        objective = GaugeMetricFamily("peakgate_slo_objective", "The share of good events each SLO promises",
                                      labels=["slo"])
        burn = GaugeMetricFamily("peakgate_slo_burn_rate", "Error ratio over the error budget (1 - objective) in "
                                 "each window; 1 spends the budget exactly over the period", labels=["slo", "window"])
        budget = GaugeMetricFamily("peakgate_slo_error_budget_remaining", "Share of the period's error budget left "
                                   "(1 untouched, negative overspent), since this process started", labels=["slo"])
        alert = GaugeMetricFamily("peakgate_slo_alert", "1 while a multiwindow burn-rate alert of that severity "
                                  "fires (page: 14.4x over 1h and 5m, or 6x over 6h and 30m; ticket: 1x over 3d "
                                  "and 6h, for a 30-day period)", labels=["slo", "severity"])
        for reading in self._source():
            objective.add_metric([reading.name], reading.objective)
            for window, rate in reading.burn.items():
                burn.add_metric([reading.name, window], rate)
            budget.add_metric([reading.name], reading.budget_remaining)
            for severity, firing in reading.alerts.items():
                alert.add_metric([reading.name, severity], 1.0 if firing else 0.0)
        yield from (objective, burn, budget, alert)


class EngineUsage:
    """Counts engine work by (model, tier, tenant, endpoint) with bounded labels: a tenant outside `tenants` (the
    configured ones) counts as "other"; the endpoint is `SERVING_ENDPOINT`, a route template."""

    def __init__(self, metrics: Metrics, tenants: Iterable[str]) -> None:
        self._counter = metrics.engine_characters
        self._tenants = frozenset(tenants)
        self._children: dict[tuple[str, str, str, str], Counter] = {}  # `labels()` costs more than a cache hit

    def record(self, model: str, tier: str, tenant: str, characters: int) -> None:
        if characters <= 0:
            return
        key = (model, tier, tenant if tenant in self._tenants else OTHER, SERVING_ENDPOINT.get())
        child = self._children.get(key)
        if child is None:
            child = self._children[key] = self._counter.labels(*key)
        child.inc(characters)
