"""The dashboard's figures, from the service's own Prometheus registry: readings, and the rates between two.

A `Reading` boils the registry down, at one clock time, to the few cumulative totals and gauges the dashboard
shows, summed over every label it does not show: a few dozen numbers whatever the label cardinality, so a ring
of them stays small. The figures between two readings are rates of their deltas; latency quantiles are
interpolated in the deltas' buckets as PromQL's `histogram_quantile` does. Pure: no clock, no I/O.

Operational endpoints (probes, scrapes, this dashboard's own polls) are left out of the request figures: they
are not traffic, and a dashboard polling every 2 s would otherwise count itself.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

import msgspec
from prometheus_client import Metric

from peakgate.config import PRIORITY_ORDER

OPERATIONAL = frozenset({"/metrics", "/healthz", "/readyz", "/openapi.json", "/dashboard", "/dashboard/data"})
REQUESTS = "peakgate_requests_total"
LATENCY = "peakgate_request_latency_seconds_bucket"
SERVED = "peakgate_segments_served_total"
BUSY = "peakgate_model_busy_seconds_total"
QUEUE = "peakgate_queue_length"
WAITING = "peakgate_queue_waiting"  # scale-out gateways: requests handed to workers, not yet answered
BREAKER = "peakgate_breaker_state"
WORKERS_READY = "peakgate_queue_workers_ready"  # scale-out gateways: workers heard from
DEGRADATION = "peakgate_degradation_level"
GPU = "peakgate_gpu_utilization_ratio"  # machines with an NVML GPU
CLASS_REQUESTS = "peakgate_class_requests_total"  # by priority class and outcome (served, shed, error)
CLASS_LATENCY = "peakgate_class_latency_seconds_bucket"
BUDGET = "peakgate_slo_error_budget_remaining"
BURN = "peakgate_slo_burn_rate"
ALERT = "peakgate_slo_alert"
QUANTILES = (0.5, 0.95, 0.99)
TM_ORIGINS = ("tm_exact", "tm_repaired")

Key = tuple[str, ...]
Buckets = Sequence[tuple[float, float]]  # (upper bound, cumulative count), by bound, the last +Inf


def _by(*labels: str) -> Callable[[Mapping[str, str]], Key | None]:
    return lambda given: tuple(given.get(label, "") for label in labels)


def _status_class(labels: Mapping[str, str]) -> Key | None:
    return None if labels["endpoint"] in OPERATIONAL else (labels["status"][:1] + "xx",)


def _tier_bucket(labels: Mapping[str, str]) -> Key | None:
    return None if labels["endpoint"] in OPERATIONAL else (labels["tier"], labels["le"])


# Sample name → the key it is summed under (the labels shown), or None for a sample left out.
_KEYS: Mapping[str, Callable[[Mapping[str, str]], Key | None]] = {
    REQUESTS: _status_class, LATENCY: _tier_bucket, SERVED: _by("origin"), BUSY: _by("model"),
    QUEUE: _by("model"), WAITING: _by(), BREAKER: _by("model"), WORKERS_READY: _by("model"),
    DEGRADATION: _by(), GPU: _by("gpu"), CLASS_REQUESTS: _by("class", "outcome"),
    CLASS_LATENCY: _by("class", "le"), BUDGET: _by("slo"), BURN: _by("slo", "window"),
    ALERT: _by("slo", "severity"),
}
_WINDOW_UNITS_S = {"s": 1.0, "m": 60.0, "h": 3_600.0, "d": 86_400.0}


@dataclass(frozen=True, slots=True)
class Reading:
    t: float  # clock seconds
    totals: Mapping[str, Mapping[Key, float]]  # sample name → key → value; absent metrics map to {}

    def of(self, name: str) -> Mapping[Key, float]:
        return self.totals.get(name, {})

    def total(self, name: str) -> float:
        return sum(self.of(name).values())


def read(families: Iterable[Metric], t: float) -> Reading:
    """The registry (`registry.collect()`) boiled down to the dashboard's totals at clock time `t`."""
    totals: dict[str, dict[Key, float]] = {name: {} for name in _KEYS}
    for family in families:
        for sample in family.samples:
            key_of = _KEYS.get(sample.name)
            key = key_of(sample.labels) if key_of is not None else None
            if key is not None:
                series = totals[sample.name]
                series[key] = series.get(key, 0.0) + sample.value
    return Reading(t, totals)


def quantile(q: float, buckets: Buckets) -> float | None:
    """PromQL's `histogram_quantile(q, …)`: linear within the bucket holding rank q·count; the highest finite
    bound when that bucket is +Inf; None without observations."""
    if not 0 < q <= 1:
        raise ValueError(f"quantile {q} is outside (0, 1]")
    if len(buckets) < 2 or buckets[-1][1] <= 0:
        return None
    rank = q * buckets[-1][1]
    lower, below = 0.0, 0.0
    for bound, count in buckets[:-1]:
        if count >= rank:  # count > below here: the bucket before held fewer than rank
            return lower + (bound - lower) * (rank - below) / (count - below)
        lower, below = bound, count
    return lower  # the rank is in the +Inf bucket: Prometheus answers the highest finite bound


class Point(msgspec.Struct):
    """One step of the charts: figures between two readings, at the later one's time."""

    t: float
    rps: float  # API requests answered per second
    error_rps: float  # of which 5xx
    success: float | None  # 2xx share; None without requests
    p50: float | None  # seconds
    p95: float | None
    p99: float | None
    queue: float  # segments queued here, plus requests handed to workers
    cache_hit: float | None  # share of segments served from the cache; None without segments
    tm_hit: float | None  # … from the translation memory
    busy: float | None  # engine busy fraction over every local worker; None without workers
    gpu: float | None  # mean utilisation of the machine's GPUs; None without one
    degradation: float | None


class Latency(msgspec.Struct):
    rps: float  # requests observed per second
    p50: float | None
    p95: float | None
    p99: float | None


class PriorityClass(Latency):
    """A priority class through the overload guard: `rps` served (with its latencies), and the rest."""

    shed_rps: float  # refused or failed for overload
    error_rps: float  # engine or internal failures


class ModelFigures(msgspec.Struct):
    name: str
    workers: int  # local engine workers (configured)
    workers_ready: float | None  # remote workers heard from (scale-out gateways)
    busy: float | None  # busy fraction of the local workers
    queue: float
    breaker: float | None  # 0 closed, 1 half-open, 2 open


class Slo(msgspec.Struct):
    name: str
    budget_remaining: float | None  # share of the period's error budget left: 1 untouched, negative overspent
    burn: dict[str, float]  # burn rate per window, shortest window first
    alerts: list[str]  # the severities whose burn-rate alert fires


class Detail(msgspec.Struct):
    """What only the latest step shows: its breakdowns."""

    window_s: float
    by_status: dict[str, float]  # requests per second by status class ("2xx", …)
    tiers: dict[str, Latency]
    classes: dict[str, PriorityClass]
    models: list[ModelFigures]
    slos: list[Slo]  # empty: no SLO configured


def figures(before: Reading, after: Reading, workers: Mapping[str, int]) -> tuple[Point, Detail]:
    """The chart point and the breakdowns between two readings (`after.t > before.t`); `workers` are the local
    engine workers per model."""
    dt = after.t - before.t
    by_status = {key[0]: value / dt for key, value in _deltas(before, after, REQUESTS).items()}
    tiers = _histograms(_deltas(before, after, LATENCY))
    overall = _quantiles(_merged(tiers.values()))
    busy = {key[0]: value / dt for key, value in _deltas(before, after, BUSY).items()}
    served = {key[0]: value for key, value in _deltas(before, after, SERVED).items()}
    segments = sum(served.values())
    local = sum(workers.values())
    rps = sum(by_status.values())
    gpus = [value for value in after.of(GPU).values() if math.isfinite(value)]
    point = Point(
        t=after.t, rps=rps, error_rps=by_status.get("5xx", 0.0),
        success=by_status.get("2xx", 0.0) / rps if rps > 0 else None,
        p50=overall[0], p95=overall[1], p99=overall[2],
        queue=after.total(QUEUE) + after.total(WAITING),
        cache_hit=served.get("cache", 0.0) / segments if segments > 0 else None,
        tm_hit=sum(served.get(origin, 0.0) for origin in TM_ORIGINS) / segments if segments > 0 else None,
        busy=sum(busy.values()) / local if local > 0 else None,
        gpu=sum(gpus) / len(gpus) if gpus else None,
        degradation=_finite(after.of(DEGRADATION).get(())),
    )
    detail = Detail(
        window_s=dt, by_status=by_status,
        tiers={tier: Latency(buckets[-1][1] / dt, *_quantiles(buckets)) for tier, buckets in tiers.items()},
        classes=_classes(before, after), models=_models(after, busy, workers), slos=_slos(after),
    )
    return point, detail


def _deltas(before: Reading, after: Reading, name: str) -> dict[Key, float]:
    earlier = before.of(name)
    return {key: value - earlier.get(key, 0.0) for key, value in after.of(name).items()}


def _histograms(deltas: Mapping[Key, float]) -> dict[str, list[tuple[float, float]]]:
    """Bucket deltas keyed (label, le) as one histogram per label value, those that observed anything."""
    histograms: dict[str, list[tuple[float, float]]] = {}
    for (label, le), count in deltas.items():
        histograms.setdefault(label, []).append((float(le), count))
    for buckets in histograms.values():
        buckets.sort()
    return {label: buckets for label, buckets in histograms.items() if buckets[-1][1] > 0}


def _merged(per_tier: Iterable[Buckets]) -> list[tuple[float, float]]:
    # Every tier shares the histogram's bounds, so summing by bound is summing the histograms.
    summed: dict[float, float] = {}
    for buckets in per_tier:
        for bound, count in buckets:
            summed[bound] = summed.get(bound, 0.0) + count
    return sorted(summed.items())


def _quantiles(buckets: Buckets) -> tuple[float | None, float | None, float | None]:
    p50, p95, p99 = (quantile(q, buckets) for q in QUANTILES)
    return p50, p95, p99


def _models(after: Reading, busy: Mapping[str, float], workers: Mapping[str, int]) -> list[ModelFigures]:
    queue, breakers, ready = after.of(QUEUE), after.of(BREAKER), after.of(WORKERS_READY)
    names = sorted({*workers, *busy, *(key[0] for labelled in (queue, breakers, ready) for key in labelled)})
    return [ModelFigures(
        name=name, workers=workers.get(name, 0), workers_ready=_finite(ready.get((name,))),
        busy=busy.get(name, 0.0) / workers[name] if workers.get(name) else None,
        queue=queue.get((name,), 0.0), breaker=_finite(breakers.get((name,))),
    ) for name in names]


def _classes(before: Reading, after: Reading) -> dict[str, PriorityClass]:
    dt = after.t - before.t
    outcomes = _deltas(before, after, CLASS_REQUESTS)
    latencies = _histograms(_deltas(before, after, CLASS_LATENCY))
    seen = {key[0] for key, count in outcomes.items() if count > 0} | set(latencies)
    names = [*(name for name in PRIORITY_ORDER if name in seen), *sorted(seen - set(PRIORITY_ORDER))]
    return {name: PriorityClass(
        outcomes.get((name, "served"), 0.0) / dt, *_quantiles(latencies.get(name, ())),
        shed_rps=outcomes.get((name, "shed"), 0.0) / dt, error_rps=outcomes.get((name, "error"), 0.0) / dt,
    ) for name in names}


def _slos(after: Reading) -> list[Slo]:
    budgets, burns, alerts = after.of(BUDGET), after.of(BURN), after.of(ALERT)
    names = sorted({key[0] for key in budgets} | {key[0] for key in burns})
    return [Slo(
        name, _finite(budgets.get((name,))),
        {window: rate for (slo, window), value in sorted(burns.items(), key=lambda item: _span_s(item[0][1]))
         if slo == name and (rate := _finite(value)) is not None},
        sorted(severity for (slo, severity), firing in alerts.items() if slo == name and firing > 0),
    ) for name in names]


def _span_s(window: str) -> float:
    # "5m", "1h", "3d": the burn windows read shortest first; a name of another form goes last.
    unit = _WINDOW_UNITS_S.get(window[-1:])
    return float(window[:-1]) * unit if unit is not None and window[:-1].isdigit() else math.inf


def _finite(value: float | None) -> float | None:
    # JSON has no NaN or infinity: an SLO with no traffic yet may export either.
    return value if value is not None and math.isfinite(value) else None
