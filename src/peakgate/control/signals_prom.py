"""What the gateways' Prometheus `/metrics` say, over a trailing window: request rate, p95 latency, in flight.

Counters and histogram buckets are cumulative, so the window's figures are differences between the newest
scrape and the oldest one still inside the window, per gateway (a restarted gateway, whose counters fell,
starts its window again). The p95 is interpolated inside its bucket, as PromQL's `histogram_quantile` does.
A gateway that does not answer is left out of this tick and logged once per outage.
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

from peakgate.errors import BadRequest

_log = logging.getLogger(__name__)
_REQUESTS = "peakgate_requests_total"
_LATENCY_BUCKET = "peakgate_request_latency_seconds_bucket"
_IN_FLIGHT = "peakgate_queue_waiting"  # requests handed to workers and not yet answered


@dataclass(frozen=True, slots=True)
class Scrape:
    """One gateway's cumulative figures at one moment."""

    at_s: float
    requests: float
    buckets: Mapping[float, float]  # upper bound (inf included) -> cumulative count, summed over labels
    in_flight: float

    def since(self, older: Scrape) -> tuple[float, dict[float, float]]:
        """Requests and per-bucket observations between `older` and this scrape."""
        deltas = {le: count - older.buckets.get(le, 0.0) for le, count in self.buckets.items()}
        return self.requests - older.requests, deltas

    def restarted_since(self, older: Scrape) -> bool:
        return self.requests < older.requests or any(c < older.buckets.get(le, 0.0) for le, c in self.buckets.items())


def parse_scrape(text: str, at_s: float) -> Scrape:
    """The figures the autoscaler reads out of one Prometheus text exposition; `BadRequest` if unreadable."""
    requests = in_flight = 0.0
    buckets: dict[float, float] = {}
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
    except (ValueError, KeyError, TypeError) as exc:
        raise BadRequest(f"unreadable /metrics: {exc}") from exc
    return Scrape(at_s, requests, buckets, in_flight)


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
        in_flight = sum(scrape.in_flight for scrape in found if scrape is not None)
        return GatewayFigures(rate, quantile_ms(0.95, buckets), round(in_flight), len(live))

    async def _scrape(self, url: str, at_s: float) -> Scrape | None:
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
        self._windows[url].add(scrape, self._window_s)
        return scrape
