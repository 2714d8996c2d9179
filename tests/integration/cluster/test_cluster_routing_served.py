"""Cluster routing across real processes on loopback ports (issue 20 item 5): three `peakgate serve` gateways
(echo engines; shanghai's takes 1 s a batch) behind a real `peakgate route`, seeded 华东 → shanghai,
华南 → guangzhou, else beijing. The router spills at the threshold and fails over on a failed health check."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import httpx
import pytest

from bench._http import Server, metric, scrape, serve

KEY = "route-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
EAST = {**AUTH, "X-Peakgate-Region": "华东".encode()}  # raw UTF-8 on the wire
BODY = {"segments": ["Open the settings"], "source": "en", "target": "es"}
SLOW_MS = 1000.0
INTERVAL_S, TIMEOUT_S, FAILURES = 0.25, 1.0, 2  # a generous timeout: shared CI cores answer late
DETECTION_S = FAILURES * (INTERVAL_S + TIMEOUT_S) + 1.0  # the checks' own window, plus scheduling slack


@dataclass
class Clusters:
    router: Server
    gateways: dict[str, Server]


def gateway_config(data_dir: Path, delay_ms: float) -> dict[str, object]:
    return {"data_dir": str(data_dir), "log_level": "warning",
            "models": [{"name": "echo-en-es", "engine": "echo", "source": "en", "target": "es",
                        "delay_ms": delay_ms}],
            "tiers": {"medium": ["echo-en-es"]}, "default_tier": "medium",
            "keys": [{"key": KEY, "tenant": "acme"}]}


def router_config(urls: dict[str, str]) -> dict[str, object]:
    def cluster(name: str, regions: list[str], max_inflight: int) -> dict[str, object]:
        return {"name": name, "regions": regions, "upstreams": [{"url": urls[name], "max_inflight": max_inflight}]}

    return {"log_level": "warning", "cluster": {
        "clusters": [cluster("shanghai", ["华东"], 2), cluster("guangzhou", ["华南"], 64),
                     cluster("beijing", [], 64)],
        "health_interval_s": INTERVAL_S, "health_timeout_s": TIMEOUT_S, "failures_before_down": FAILURES,
        "successes_before_up": 1}}


@pytest.fixture
def clusters(tmp_path: Path) -> Iterator[Clusters]:
    with contextlib.ExitStack() as stack:
        gateways = {name: stack.enter_context(serve(gateway_config(tmp_path / name, SLOW_MS if slow else 0.0)))
                    for name, slow in (("shanghai", True), ("guangzhou", False), ("beijing", False))}
        path = tmp_path / "route.json"
        path.write_text(json.dumps(router_config({name: s.url for name, s in gateways.items()})), encoding="utf-8")
        argv = [sys.executable, "-m", "peakgate.cli", "route", "--port", "{port}", "--config", str(path)]
        router = stack.enter_context(serve(None, argv=argv, log=tmp_path / "router.log"))
        yield Clusters(router, gateways)


def routed(reply: httpx.Response) -> tuple[int, str | None, str | None]:
    return reply.status_code, reply.headers.get("x-peakgate-cluster"), reply.headers.get("x-peakgate-spilled")


def test_requests_reach_the_cluster_their_region_names_with_everything_passed_through(clusters: Clusters) -> None:
    url = clusters.router.url
    east = httpx.post(f"{url}/v1/translate", json=BODY, headers=EAST, timeout=10)
    assert routed(east) == (200, "shanghai", None)
    assert east.json()["translations"][0]["text"] == "Open the settings"
    south = httpx.post(f"{url}/v2/translate", data={"text": "Hello", "target_lang": "ES"}, timeout=10,
                       headers={"Authorization": f"DeepL-Auth-Key {KEY}", "X-Peakgate-Region": quote("华南")})
    assert routed(south) == (200, "guangzhou", None) and south.json()["translations"][0]["text"] == "Hello"
    anywhere = httpx.post(f"{url}/v1/translate", json=BODY, timeout=10)  # no key: the gateway's own 401
    assert routed(anywhere) == (401, "beijing", None) and anywhere.json()["error"]["code"] == "unauthorized"
    samples = scrape(url)
    for cluster, outcome in (("shanghai", "2xx"), ("guangzhou", "2xx"), ("beijing", "4xx")):
        assert metric(samples, "peakgate_router_requests_total", cluster=cluster, outcome=outcome) == 1


async def wait_for_sample(url: str, name: str, value: float, within_s: float, **labels: str) -> float:
    """Poll the router's /metrics (yielding to other tasks) until the sample has the value; returns when."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if metric(scrape(url), name, **labels) == value:
            return time.monotonic()
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name}{labels} did not reach {value} within {within_s} s")


async def test_at_the_threshold_new_requests_spill_to_the_next_cluster(clusters: Clusters) -> None:
    url = clusters.router.url
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        slow = [asyncio.create_task(client.post("/v1/translate", json=BODY, headers=EAST)) for _ in range(2)]
        # Two in flight of shanghai's max_inflight 2: load 1.0, past the 85 % seed threshold.
        await wait_for_sample(url, "peakgate_router_cluster_load", 1.0, SLOW_MS / 1000 / 2, cluster="shanghai")
        spilled = await client.post("/v1/translate", json=BODY, headers=EAST)
        held = await asyncio.gather(*slow)
        back = await client.post("/v1/translate", json=BODY, headers=EAST)
    assert routed(spilled) == (200, "guangzhou", "shanghai")
    assert [routed(r) for r in held] == [(200, "shanghai", None)] * 2
    assert routed(back) == (200, "shanghai", None)  # under the threshold again
    samples = scrape(url)
    assert metric(samples, "peakgate_router_spills_total", **{"from": "shanghai", "to": "guangzhou"}) == 1


async def test_a_failed_health_check_fails_traffic_over_with_no_5xx_past_the_detection_window(
        clusters: Clusters) -> None:
    url = clusters.router.url
    async with httpx.AsyncClient(base_url=url, timeout=10) as client:
        assert routed(await client.post("/v1/translate", json=BODY, headers=EAST))[1] == "shanghai"
        # Quiet: only the health checks can notice.
        killed_at = stop(clusters.gateways["shanghai"])
        down_at = await wait_for_sample(url, "peakgate_router_cluster_healthy", 0.0, DETECTION_S, cluster="shanghai")
        assert down_at - killed_at <= DETECTION_S
        after = [routed(await client.post("/v1/translate", json=BODY, headers=EAST)) for _ in range(5)]
        assert after == [(200, "guangzhou", "shanghai")] * 5
        # Under traffic: guangzhou goes too, while requests keep coming.
        killed_at = stop(clusters.gateways["guangzhou"])
        seen: list[tuple[float, tuple[int, str | None, str | None]]] = []
        while time.monotonic() < killed_at + DETECTION_S + 1.0:
            seen.append((time.monotonic() - killed_at, routed(await client.post("/v1/translate", json=BODY,
                                                                                  headers=EAST))))
            await asyncio.sleep(0.02)
    late = [outcome for at, outcome in seen if at > DETECTION_S]
    assert late and all(outcome == (200, "beijing", "shanghai") for outcome in late)
    assert all(outcome[0] < 500 for at, outcome in seen if at > DETECTION_S)
    assert metric(scrape(url), "peakgate_router_upstream_up", cluster="guangzhou") == 0


def stop(gateway: Server) -> float:
    gateway.proc.terminate()
    gateway.proc.wait(timeout=20)
    return time.monotonic()
