"""The engine work the live cost splits by: a real gateway (`Service` and its `Metrics`) counts the characters its
engines translate by (model, tier, tenant, endpoint) with bounded labels, and the autoscaler's scraper reads that
exposition and hands each tick the work since the previous one."""

from __future__ import annotations

import contextvars

import httpx
import pytest
from autoscale_fakes import Gateways

from peakgate.backends.echo_backend import EchoBackend
from peakgate.clock import FakeClock
from peakgate.config import BatcherConfig, KeyConfig, ModelConfig, Settings
from peakgate.control.cost import CostKey
from peakgate.control.signals_prom import GatewayScraper, parse_scrape
from peakgate.domain import Principal, TranslateRequest
from peakgate.observe.metrics import SERVING_ENDPOINT, EngineUsage, Metrics
from peakgate.service import Service

ECHO = "echo-en-es"


def _usage_page(work: list[tuple[str, str, int]], tenants: tuple[str, ...] = ("acme",)) -> Metrics:
    """A gateway's metrics after its engines translated `work`: (tenant, endpoint, characters) on ECHO/medium."""
    metrics = Metrics()
    usage = EngineUsage(metrics, tenants)
    for tenant, endpoint, characters in work:
        contextvars.copy_context().run(_record, usage, tenant, endpoint, characters)
    return metrics


def _record(usage: EngineUsage, tenant: str, endpoint: str, characters: int) -> None:
    SERVING_ENDPOINT.set(endpoint)
    usage.record(ECHO, "medium", tenant, characters)


def test_a_gateways_exposition_reads_as_engine_characters_per_key_with_bounded_tenants() -> None:
    metrics = _usage_page([("acme", "/v2/translate", 120), ("acme", "/v2/translate", 30),
                           ("globex", "/translate", 7), ("acme", "/v1/translate", 0)])
    metrics.requests.labels("/v2/translate", "medium", "200").inc()  # other families are read as before
    scrape = parse_scrape(metrics.render().decode(), at_s=3.0)
    assert scrape.engine_chars == {CostKey(ECHO, "medium", "acme", "/v2/translate"): 150.0,
                                   CostKey(ECHO, "medium", "other", "/translate"): 7.0}  # globex: not configured
    assert scrape.requests == 1


def _settings() -> Settings:
    return Settings.model_validate({
        "models": (ModelConfig(name=ECHO, engine="echo", source="en", target="es"),),
        "tiers": {"medium": (ECHO,)}, "default_tier": "medium",
        "keys": (KeyConfig(key="k-acme", tenant="acme"),),
        "batcher": BatcherConfig(max_queue_delay_ms=0.0),  # the FakeClock never passes a batching delay
    })


async def test_the_service_counts_engine_work_only_not_cache_hits_under_the_serving_endpoint() -> None:
    service = Service(_settings(), clock=FakeClock(), backends={ECHO: EchoBackend(ECHO, [("en", "es")])})
    await service.start()
    try:
        acme = Principal(key="k-acme", tenant="acme", priority="interactive")
        SERVING_ENDPOINT.set("/v2/translate")  # what the HTTP layer sets for the request's route
        await service.run(TranslateRequest(("Open the file", "Save"), "en", "es"), acme, "interactive")
        await service.run(TranslateRequest(("Open the file", "Close it"), "en", "es"), acme, "interactive")
        scrape = parse_scrape(service.metrics.render().decode(), at_s=0.0)
    finally:
        await service.close()
    # "Open the file" the second time is a cache hit: 13 + 4 + 8 characters went to the engine.
    assert scrape.engine_chars == {CostKey(ECHO, "medium", "acme", "/v2/translate"): 25.0}


def _page(acme: int, other: int = 0, requests: int = 0) -> bytes:
    metrics = _usage_page([("acme", "/v2/translate", acme), ("globex", "jobs", other)])
    for _ in range(requests):
        metrics.requests.labels("/v2/translate", "medium", "200").inc()
    return metrics.render()


ACME = CostKey(ECHO, "medium", "acme", "/v2/translate")
JOBS = CostKey(ECHO, "medium", "other", "jobs")


async def test_each_read_hands_over_the_work_since_the_previous_one_summed_over_gateways() -> None:
    gateways = Gateways()
    a, b = "http://10.0.0.1:8080", "http://10.0.0.2:8080"
    async with httpx.AsyncClient(transport=httpx.MockTransport(gateways.handler)) as client:
        scraper = GatewayScraper([a, b], client, window_s=60.0)
        gateways.pages = {a: _page(1000, requests=5), b: _page(50, 10, requests=5)}
        assert (await scraper.read(0.0)).engine_chars_by_key == {}  # totals from before the autoscaler looked
        gateways.pages = {a: _page(1300, requests=6), b: _page(50, 40, requests=6)}
        assert (await scraper.read(5.0)).engine_chars_by_key == pytest.approx({ACME: 300.0, JOBS: 30.0})
        gateways.pages[b] = None  # b is silent for a tick; its next answer covers the gap
        assert (await scraper.read(10.0)).engine_chars_by_key == {}
        gateways.pages = {a: _page(1300, requests=7), b: _page(90, 70, requests=8)}
        assert (await scraper.read(15.0)).engine_chars_by_key == pytest.approx({ACME: 40.0, JOBS: 30.0})
        gateways.pages = {a: _page(20, requests=1), b: _page(90, 70, requests=8)}  # a restarted: from zero
        assert (await scraper.read(20.0)).engine_chars_by_key == pytest.approx({ACME: 20.0})
