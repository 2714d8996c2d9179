"""What the gateways' Prometheus `/metrics` say, over a trailing window: request rate, p95 latency, in flight;
and, per tick, the engine work they counted by (model, tier, tenant, endpoint), which the live cost splits by.

Counters and histogram buckets are cumulative, so the window's figures are differences between the newest
scrape and the oldest one still inside the window, per gateway (a restarted gateway, whose counters fell,
starts its window again). The p95 is interpolated inside its bucket, as PromQL's `histogram_quantile` does.
Engine work is the difference from the gateway's previous scrape (a gateway's first scrape counts nothing: its
totals hold work from before the autoscaler looked; after a restart, the new totals are the work since).
A gateway that does not answer is left out of this tick and logged once per outage; its next answer's
difference covers the outage.
"""

from __future__ import annotations

import asyncio
import logging
import math
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

from peakgate.control.cost import CostKey
from peakgate.errors import BadRequest

_log = logging.getLogger(__name__)
_REQUESTS = "peakgate_requests_total"
_LATENCY_BUCKET = "peakgate_request_latency_seconds_bucket"
_IN_FLIGHT = "peakgate_queue_waiting"  # requests handed to workers and not yet answered
_ENGINE_CHARS = "peakgate_engine_characters_total"


@dataclass(frozen=True, slots=True)
class Scrape:
    """One gateway's cumulative figures at one moment."""

    at_s: float
    requests: float
    buckets: Mapping[float, float]  # upper bound (inf included) -> cumulative count, summed over labels
    in_flight: float
    engine_chars: Mapping[CostKey, float] = field(default_factory=dict)  # cumulative, per key

    def since(self, older: Scrape) -> tuple[float, dict[float, float]]:
        """Requests and per-bucket observations between `older` and this scrape."""
        deltas = {le: count - older.buckets.get(le, 0.0) for le, count in self.buckets.items()}
        return self.requests - older.requests, deltas

    def restarted_since(self, older: Scrape) -> bool:
        return self.requests < older.requests or any(c < older.buckets.get(le, 0.0) for le, c in self.buckets.items())

    def engine_since(self, older: Scrape) -> dict[CostKey, float]:
        """Engine characters per key between `older` and this scrape (a total that fell restarted from zero)."""
        restarted = self.restarted_since(older)
        deltas: dict[CostKey, float] = {}
        for key, total in self.engine_chars.items():
            before = 0.0 if restarted else older.engine_chars.get(key, 0.0)
            delta = total - before if total >= before else total
            if delta > 0:
                deltas[key] = delta
        return deltas


def parse_scrape(text: str, at_s: float) -> Scrape:
    """The figures the autoscaler reads out of one Prometheus text exposition; `BadRequest` if unreadable."""
    requests = in_flight = 0.0
    buckets: dict[float, float] = {}
    engine: dict[CostKey, float] = {}
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                if sample.name == _REQUESTS:
                    requests += sample.value
                elif sample.name == _LATENCY_BUCKET:
                    le = float(sample.labels["le"])
                    buckets[le] = buckets.get(le, 0.0) + sample.value
                elif sample.name == _IN_FLIGHT:
                    in_flight += sample.value
                elif sample.name == _ENGINE_CHARS:
                    labels = sample.labels
                    key = CostKey(labels["model"], labels["tier"], labels["tenant"], labels["endpoint"])
                    engine[key] = engine.get(key, 0.0) + sample.value
    except (ValueError, KeyError, TypeError) as exc:
        raise BadRequest(f"unreadable /metrics: {exc}") from exc
    return Scrape(at_s, requests, buckets, in_flight, engine)


def quantile_ms(q: float, buckets: Mapping[float, float]) -> float:
    """The `q` quantile of cumulative bucket counts, in milliseconds (0 with no observations)."""
    bounds = sorted(buckets)
    if not bounds or buckets[bounds[-1]] <= 0:
        return 0.0
    rank = q * buckets[bounds[-1]]
    lower, below = 0.0, 0.0
    for le in bounds:
        count = buckets[le]
        if count >= rank:
            if math.isinf(le):  # beyond the last finite bound: that bound is all we know
                return lower * 1000.0
            inside = count - below
            share = (rank - below) / inside if inside > 0 else 1.0
            return (lower + (le - lower) * share) * 1000.0
        lower, below = le, count
    return lower * 1000.0


@dataclass(frozen=True, slots=True)
class GatewayFigures:
    request_rate_per_s: float
    p95_latency_ms: float
    in_flight: int
    answered: int  # gateways that answered this tick
    engine_chars_by_key: Mapping[CostKey, float] = field(default_factory=dict)  # since the previous read


@dataclass(slots=True)
class _Window:
    scrapes: deque[Scrape] = field(default_factory=deque)

    def add(self, scrape: Scrape, window_s: float) -> None:
        if self.scrapes and scrape.restarted_since(self.scrapes[-1]):
            self.scrapes.clear()
        self.scrapes.append(scrape)
        while len(self.scrapes) > 2 and scrape.at_s - self.scrapes[1].at_s >= window_s:
            self.scrapes.popleft()  # keep the newest scrape at least `window_s` old as the window's start


def _combine(windows: Iterable[_Window]) -> tuple[float, dict[float, float]]:
    """Requests per second and bucket observations summed over every gateway's window."""
    rate = 0.0
    buckets: dict[float, float] = {}
    for window in windows:
        first, last = window.scrapes[0], window.scrapes[-1]
        if last.at_s <= first.at_s:
            continue
        requests, deltas = last.since(first)
        rate += requests / (last.at_s - first.at_s)
        for le, count in deltas.items():
            buckets[le] = buckets.get(le, 0.0) + count
    return rate, buckets


class GatewayScraper:
    """Scrapes every gateway's `/metrics` at once and keeps each one's trailing window."""

    def __init__(self, urls: Sequence[str], client: httpx.AsyncClient, window_s: float) -> None:
        self._urls = [url.rstrip("/") for url in urls]
        self._client = client
        self._window_s = window_s
        self._windows = {url: _Window() for url in self._urls}
        self._down: set[str] = set()

    async def read(self, at_s: float) -> GatewayFigures:
        found = await asyncio.gather(*(self._scrape(url, at_s) for url in self._urls))
        live = [url for url, scrape in zip(self._urls, found, strict=True) if scrape is not None]
        rate, buckets = _combine(self._windows[url] for url in live)
        in_flight = sum(scrape.in_flight for scrape, _ in filter(None, found))
        engine: dict[CostKey, float] = {}
        for _, deltas in filter(None, found):
            for key, chars in deltas.items():
                engine[key] = engine.get(key, 0.0) + chars
        return GatewayFigures(rate, quantile_ms(0.95, buckets), round(in_flight), len(live), engine)

    async def _scrape(self, url: str, at_s: float) -> tuple[Scrape, dict[CostKey, float]] | None:
        """The gateway's scrape and its engine work since its previous one; None when it did not answer."""
        try:
            response = await self._client.get(f"{url}/metrics")
            response.raise_for_status()
            scrape = parse_scrape(response.text, at_s)
        except (httpx.HTTPError, BadRequest) as exc:
            if url not in self._down:
                _log.warning("gateway %s left out of the signals: %s", url, exc)
            self._down.add(url)
            return None
        if url in self._down:
            _log.info("gateway %s answers /metrics again", url)
            self._down.discard(url)
        window = self._windows[url]
        engine = scrape.engine_since(window.scrapes[-1]) if window.scrapes else {}
        window.add(scrape, self._window_s)
        return scrape, engine
