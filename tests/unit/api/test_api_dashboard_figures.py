"""The dashboard's figures from registry readings: PromQL's histogram_quantile, rates of deltas, operational
endpoints left out, and the SLO panel empty when no SLO gauge is exported."""

from __future__ import annotations

import math

import pytest
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from peakgate.api.dashboard_figures import REQUESTS, Reading, figures, quantile, read
from peakgate.observe.metrics import Metrics
from peakgate.scaleout.metrics import QueueMetrics

INF = math.inf
BUCKETS = [(0.1, 10.0), (0.5, 30.0), (1.0, 40.0), (INF, 40.0)]


@pytest.mark.parametrize(("q", "expected"), [
    (0.25, 0.1),  # rank 10: the top of the first bucket
    (0.5, 0.3),  # rank 20: halfway through (0.1, 0.5]
    (0.99, 0.98),  # rank 39.6: 96 % through (0.5, 1.0]
    (1.0, 1.0),
])
def test_quantile_interpolates_within_the_bucket_like_histogram_quantile(q: float, expected: float) -> None:
    assert quantile(q, BUCKETS) == pytest.approx(expected)


def test_quantile_in_the_inf_bucket_is_the_highest_finite_bound() -> None:
    assert quantile(0.9, [(0.1, 5.0), (1.0, 5.0), (INF, 10.0)]) == 1.0


@pytest.mark.parametrize("buckets", [[], [(INF, 3.0)], [(0.1, 0.0), (INF, 0.0)]])
def test_quantile_without_observations_is_none(buckets: list[tuple[float, float]]) -> None:
    assert quantile(0.5, buckets) is None


@pytest.mark.parametrize("q", [0.0, -0.1, 1.5])
def test_quantile_outside_zero_to_one_is_refused(q: float) -> None:
    with pytest.raises(ValueError, match="outside"):
        quantile(q, BUCKETS)


def test_a_reading_sums_over_the_labels_not_shown_and_leaves_out_operational_endpoints() -> None:
    metrics = Metrics()
    metrics.requests.labels("/v1/translate", "medium", "200").inc(3)
    metrics.requests.labels("/v2/translate", "tiny", "200").inc()
    metrics.requests.labels("/v1/translate", "none", "429").inc(2)
    for probe in ("/metrics", "/healthz", "/dashboard/data"):
        metrics.requests.labels(probe, "none", "200").inc(50)
    assert read(metrics.registry.collect(), 0.0).of(REQUESTS) == {("2xx",): 4.0, ("4xx",): 2.0}


def test_figures_are_rates_of_the_deltas_between_two_readings() -> None:
    metrics = Metrics()
    metrics.requests.labels("/v1/translate", "medium", "200").inc(100)  # before: not in this step
    before = read(metrics.registry.collect(), 10.0)
    for status, count in (("200", 16), ("429", 2), ("503", 2)):
        metrics.requests.labels("/v1/translate", "medium", status).inc(count)
    for origin, count in (("engine", 2), ("cache", 5), ("tm_exact", 2), ("tm_repaired", 1)):
        metrics.segments_served.labels(origin).inc(count)
    metrics.model_busy.labels("m").inc(1.0)
    metrics.queue_length.labels("m").set(4)
    metrics.degradation_level.set(2)
    point, detail = figures(before, read(metrics.registry.collect(), 20.0), {"m": 2})
    assert (point.t, point.rps, point.error_rps, point.success) == (20.0, 2.0, 0.2, 0.8)
    assert (point.cache_hit, point.tm_hit) == (0.5, 0.3)
    assert point.busy == pytest.approx(0.05)  # 1 engine-second in 10 s over 2 workers
    assert (point.queue, point.degradation, point.gpu) == (4.0, 2.0, None)
    assert detail.window_s == 10.0 and detail.by_status == {"2xx": 1.6, "4xx": 0.2, "5xx": 0.2}


def test_latency_quantiles_come_from_this_steps_observations_only() -> None:
    metrics = Metrics()
    for _ in range(100):
        metrics.request_latency.labels("/v1/translate", "medium").observe(20.0)  # an earlier bad minute
    metrics.request_latency.labels("/healthz", "none").observe(25.0)
    before = read(metrics.registry.collect(), 0.0)
    for seconds in [0.004] * 90 + [0.2] * 10:
        metrics.request_latency.labels("/v1/translate", "medium").observe(seconds)
    for _ in range(100):
        metrics.request_latency.labels("/v1/translate", "tiny").observe(0.0008)
        metrics.request_latency.labels("/metrics", "none").observe(9.0)  # scrapes are not traffic
    point, detail = figures(before, read(metrics.registry.collect(), 2.0), {})
    assert point.p50 == pytest.approx(0.001)  # the 100th of 200: the top of tiny's (0, 1 ms] bucket
    assert point.p95 == pytest.approx(0.005)  # the 190th: the top of (2.5, 5 ms], where medium's 90 fell
    assert point.p99 == pytest.approx(0.1 + 0.15 * 8 / 10)
    assert set(detail.tiers) == {"medium", "tiny"}
    assert detail.tiers["medium"].rps == 50.0 and detail.tiers["tiny"].p99 == pytest.approx(0.00099)


def test_no_traffic_gives_no_ratios_rather_than_zeros() -> None:
    metrics = Metrics()
    before = read(metrics.registry.collect(), 0.0)
    point, detail = figures(before, read(metrics.registry.collect(), 2.0), {})
    assert (point.rps, point.success, point.p99, point.cache_hit, point.busy) == (0.0, None, None, None, None)
    assert detail.tiers == {} and detail.classes == {}


def test_models_join_configured_workers_with_breakers_queues_and_ready_workers() -> None:
    metrics = Metrics()
    queue = QueueMetrics(metrics.registry)
    metrics.breaker_state.labels("a").set(2)
    metrics.queue_length.labels("b").set(3)
    queue.workers_ready.labels("c").set(4)
    queue.waiting.set(5)
    before = read(metrics.registry.collect(), 0.0)
    metrics.model_busy.labels("a").inc(1.0)
    point, detail = figures(before, read(metrics.registry.collect(), 2.0), {"a": 1, "b": 2})
    assert point.queue == 8.0  # queued here and handed to workers
    assert [(m.name, m.workers, m.workers_ready, m.busy, m.queue, m.breaker) for m in detail.models] == [
        ("a", 1, None, 0.5, 0.0, 2.0), ("b", 2, None, 0.0, 3.0, None), ("c", 0, 4.0, None, 0.0, None)]


def slo_registry() -> tuple[CollectorRegistry, Gauge, Gauge, Gauge]:
    registry = CollectorRegistry()
    budget = Gauge("peakgate_slo_error_budget_remaining", "budget", ["slo"], registry=registry)
    burn = Gauge("peakgate_slo_burn_rate", "burn", ["slo", "window"], registry=registry)
    alert = Gauge("peakgate_slo_alert", "alert", ["slo", "severity"], registry=registry)
    return registry, budget, burn, alert


def test_slos_read_budget_burn_shortest_window_first_and_firing_alerts() -> None:
    registry, budget, burn, alert = slo_registry()
    budget.labels("interactive_availability").set(0.75)
    budget.labels("batch_availability").set(float("nan"))  # no events yet: not a number JSON can carry
    for window, rate in (("1h", 2.0), ("5m", 14.0), ("3d", 0.5), ("30m", 3.0), ("6h", 1.0)):
        burn.labels("interactive_availability", window).set(rate)
    burn.labels("batch_availability", "5m").set(float("inf"))
    alert.labels("interactive_availability", "page").set(1)
    alert.labels("interactive_availability", "ticket").set(0)
    reading = read(registry.collect(), 1.0)
    _point, detail = figures(Reading(0.0, {}), reading, {})
    batch, interactive = detail.slos
    assert (batch.name, batch.budget_remaining, batch.burn, batch.alerts) == ("batch_availability", None, {}, [])
    assert interactive.budget_remaining == 0.75 and interactive.alerts == ["page"]
    assert list(interactive.burn.items()) == [("5m", 14.0), ("30m", 3.0), ("1h", 2.0), ("6h", 1.0), ("3d", 0.5)]


def test_no_slo_gauges_means_no_slo_panel() -> None:
    registry, _budget, _burn, _alert = slo_registry()  # registered, but no SLO exported
    _point, detail = figures(Reading(0.0, {}), read(registry.collect(), 1.0), {})
    assert detail.slos == []
    _point, detail = figures(Reading(0.0, {}), read(CollectorRegistry().collect(), 1.0), {})
    assert detail.slos == []


def test_priority_classes_in_priority_order_with_served_latency_and_the_rest() -> None:
    registry = CollectorRegistry()
    outcomes = Counter("peakgate_class_requests_total", "o", ["class", "outcome"], registry=registry)
    latency = Histogram("peakgate_class_latency_seconds", "l", ["class"], buckets=(0.01, 0.1), registry=registry)
    gpu = Gauge("peakgate_gpu_utilization_ratio", "g", ["gpu"], registry=registry)
    before = read(registry.collect(), 0.0)
    for klass, outcome, count in (("batch", "shed", 4), ("interactive", "served", 8), ("interactive", "error", 2)):
        outcomes.labels(klass, outcome).inc(count)
    for _ in range(8):
        latency.labels("interactive").observe(0.05)
    gpu.labels("0").set(0.2)
    gpu.labels("1").set(0.6)
    point, detail = figures(before, read(registry.collect(), 2.0), {})
    assert list(detail.classes) == ["interactive", "batch"]
    interactive, batch = detail.classes.values()
    assert (interactive.rps, interactive.error_rps, interactive.p50) == (4.0, 1.0, pytest.approx(0.055))
    assert (batch.rps, batch.shed_rps, batch.p99) == (0.0, 2.0, None)
    assert point.gpu == pytest.approx(0.4)
