"""The router app in-process: fake gateways as its httpx transport, a FakeClock for the health checks."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
from cluster_fakes import BEIJING, GUANGZHOU, SHANGHAI, seed

from bench._http import metric
from peakgate.clock import FakeClock
from peakgate.cluster.app import RouterApp
from peakgate.cluster.config import ClusterConfig

EAST = {"X-Peakgate-Region": "华东".encode()}


class FakeGateways(httpx.AsyncBaseTransport):
    """Every gateway answers 201 with what it was sent, unless `dead` (refuses connections, before reading the
    body as a real connect would) or `busy` (/readyz 503); `/hold` waits for `release`, `/timeout` times out."""

    def __init__(self) -> None:
        self.dead: set[str] = set()
        self.busy: set[str] = set()
        self.release = asyncio.Event()
        self.seen: list[tuple[str, httpx.Request]] = []

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        gateway = f"{request.url.scheme}://{request.url.host}:{request.url.port}"
        if gateway in self.dead:
            raise httpx.ConnectError("connection refused", request=request)
        await request.aread()
        if request.url.path in ("/healthz", "/readyz"):
            return httpx.Response(503 if request.url.path == "/readyz" and gateway in self.busy else 200)
        self.seen.append((gateway, request))
        if request.url.path == "/hold":
            await self.release.wait()
        if request.url.path == "/timeout":
            raise httpx.ReadTimeout("no answer", request=request)
        headers = [("content-type", "application/json"), ("connection", "x-hop"), ("x-hop", "1"),
                   ("keep-alive", "timeout=5"), ("x-gateway", gateway)]
        return httpx.Response(201, headers=headers, stream=Streamed(json.dumps({"body": request.content.decode()})))


class Streamed(httpx.AsyncByteStream):
    """A body still to be read, as a real connection gives it (a built Response's content counts as read)."""

    def __init__(self, text: str) -> None:
        self._chunks = [text[: len(text) // 2].encode(), text[len(text) // 2:].encode()]

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for chunk in self._chunks:
            yield chunk


@contextlib.asynccontextmanager
async def harness(config: ClusterConfig | None = None) -> AsyncIterator[tuple[RouterApp, httpx.AsyncClient,
                                                                             FakeGateways]]:
    gateways = FakeGateways()
    app = RouterApp(config or seed(), clock=FakeClock(), transport=gateways)
    await app.start()
    transport = httpx.ASGITransport(app=app, client=("10.9.0.1", 5000))
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://router") as client:
            yield app, client, gateways
    finally:
        await app.close()


def samples(app: RouterApp) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    app.router.publish()
    parsed: dict[tuple[str, frozenset[tuple[str, str]]], float] = {}
    for family in app.metrics.registry.collect():
        for sample in family.samples:
            parsed[(sample.name, frozenset(sample.labels.items()))] = sample.value
    return parsed


async def test_request_and_answer_go_through_but_for_hop_by_hop_headers() -> None:
    async with harness() as (_app, client, gateways):
        reply = await client.post(
            "/v2/translate%20x?auth_key=k&x=%E5", content=b"text=hello",
            headers={**EAST, "Authorization": "DeepL-Auth-Key k", "Connection": "x-drop", "X-Drop": "1",
                     "Keep-Alive": "timeout=1", "TE": "trailers", "Content-Type": "application/x-www-form-urlencoded"})
    assert reply.status_code == 201 and reply.json() == {"body": "text=hello"}
    assert reply.headers["x-gateway"] == SHANGHAI and reply.headers["x-peakgate-cluster"] == "shanghai"
    assert not {"x-hop", "keep-alive", "x-peakgate-spilled"} & set(reply.headers)
    gateway, sent = gateways.seen[0]
    assert (gateway, sent.method, sent.url.raw_path) == (SHANGHAI, "POST", b"/v2/translate%20x?auth_key=k&x=%E5")
    assert sent.headers["authorization"] == "DeepL-Auth-Key k"
    assert sent.headers["host"] == "sh.test:8080" and sent.headers["x-forwarded-for"] == "10.9.0.1"
    assert (b"x-peakgate-region", "华东".encode()) in sent.headers.raw  # the bytes as sent
    assert not {"x-drop", "keep-alive", "te"} & set(sent.headers)


async def test_no_header_and_an_unplaced_address_go_to_the_default_cluster() -> None:
    async with harness() as (_app, client, _gateways):
        reply = await client.get("/v1/languages")
    assert reply.headers["x-gateway"] == BEIJING and reply.headers["x-peakgate-cluster"] == "beijing"


async def wait_for(condition: Any, rounds: int = 100) -> None:
    for _ in range(rounds):
        if condition():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition not met")


async def test_at_the_threshold_new_requests_spill_to_the_next_cluster_and_say_so() -> None:
    async with harness() as (app, client, gateways):
        held = [asyncio.create_task(client.post("/hold", headers=EAST))]
        await wait_for(lambda: len(gateways.seen) == 1)  # load 1/2: under 85 %
        held.append(asyncio.create_task(client.post("/hold", headers=EAST)))
        await wait_for(lambda: len(gateways.seen) == 2)  # load 2/2
        spilled = await client.post("/v1/translate", headers=EAST)
        gateways.release.set()
        answers = await asyncio.gather(*held)
        after = await client.post("/v1/translate", headers=EAST)
    assert [g for g, _ in gateways.seen[:2]] == [SHANGHAI, SHANGHAI]
    assert all(a.headers["x-peakgate-cluster"] == "shanghai" for a in answers)
    assert spilled.headers["x-peakgate-cluster"] == "guangzhou" and spilled.headers["x-gateway"] == GUANGZHOU
    assert spilled.headers["x-peakgate-spilled"] == "shanghai"
    assert after.headers["x-peakgate-cluster"] == "shanghai" and "x-peakgate-spilled" not in after.headers
    found = samples(app)
    assert metric(found, "peakgate_router_spills_total", **{"from": "shanghai", "to": "guangzhou"}) == 1
    assert metric(found, "peakgate_router_requests_total", cluster="shanghai", outcome="2xx") == 3
    assert metric(found, "peakgate_router_cluster_load", cluster="shanghai") == 0


async def test_a_gateway_whose_readyz_says_overloaded_takes_no_preferred_traffic() -> None:
    async with harness() as (app, client, gateways):
        gateways.busy.add(SHANGHAI)
        await app.health.check_all()
        reply = await client.post("/v1/translate", headers=EAST)
    assert (reply.headers["x-peakgate-cluster"], reply.headers["x-peakgate-spilled"]) == ("guangzhou", "shanghai")


async def test_a_refused_connection_is_retried_elsewhere_and_counts_as_a_failed_check() -> None:
    async with harness() as (app, client, gateways):
        gateways.dead.add(SHANGHAI)
        first = await client.post("/v1/translate", headers=EAST, content=b"{}")
        assert app.health.health(SHANGHAI).up and app.health.health(SHANGHAI).streak == 1
        second = await client.post("/v1/translate", headers=EAST)  # refused again: down (failures_before_down 2)
        found = samples(app)
        third = await client.post("/v1/translate", headers=EAST)  # straight to guangzhou
    assert [routed(r) for r in (first, second, third)] == [(201, "guangzhou", "shanghai")] * 3
    assert [g for g, _ in gateways.seen] == [GUANGZHOU] * 3
    assert metric(found, "peakgate_router_cluster_healthy", cluster="shanghai") == 0
    assert metric(found, "peakgate_router_upstream_up", upstream=SHANGHAI) == 0
    assert metric(found, "peakgate_router_requests_total", cluster="shanghai", outcome="upstream_error") == 2


async def test_a_failed_health_check_fails_over_with_hysteresis() -> None:
    async with harness() as (app, client, gateways):
        gateways.dead.add(SHANGHAI)
        await app.health.check_all()
        assert app.health.health(SHANGHAI).up  # one failed check is not enough
        await app.health.check_all()
        reply = await client.post("/v1/translate", headers=EAST)
        gateways.dead.clear()
        await app.health.check_all()
        assert not app.health.health(SHANGHAI).up  # successes_before_up 2
        await app.health.check_all()
        back = await client.post("/v1/translate", headers=EAST)
    assert (routed(reply), routed(back)) == ((201, "guangzhou", "shanghai"), (201, "shanghai", None))
    assert [g for g, _ in gateways.seen] == [GUANGZHOU, SHANGHAI]


def routed(reply: httpx.Response) -> tuple[int, str | None, str | None]:
    return reply.status_code, reply.headers.get("x-peakgate-cluster"), reply.headers.get("x-peakgate-spilled")


async def test_with_no_healthy_cluster_requests_get_a_json_503_with_retry_after() -> None:
    async with harness() as (app, client, gateways):
        gateways.dead.update({SHANGHAI, GUANGZHOU, BEIJING})
        for _ in range(app.config.failures_before_down):
            await app.health.check_all()
        reply = await client.post("/v1/translate", headers=EAST)
        ready, alive = await client.get("/readyz"), await client.get("/healthz")
        found = samples(app)
    assert reply.status_code == 503 and reply.headers["retry-after"] == "2"
    assert reply.json()["error"] == {"code": "no_healthy_cluster",
                                     "message": "no healthy cluster among shanghai, guangzhou, beijing"}
    assert ready.status_code == 503 and ready.headers["retry-after"] == "2" and alive.status_code == 200
    assert metric(found, "peakgate_router_requests_total", cluster="none", outcome="no_cluster") == 1


async def test_a_gateway_failing_mid_exchange_is_a_json_502() -> None:
    async with harness() as (app, client, _gateways):
        reply = await client.get("/timeout")
        found = samples(app)
    assert reply.status_code == 502 and reply.json()["error"]["code"] == "upstream_failed"
    assert "bj.test" in reply.json()["error"]["message"]
    assert metric(found, "peakgate_router_requests_total", cluster="beijing", outcome="upstream_error") == 1


async def test_a_sticky_tenant_stays_on_the_cluster_it_spilled_to() -> None:
    acme, other = {**EAST, "Authorization": "Bearer k-acme"}, {**EAST, "Authorization": "Bearer k-other"}
    async with harness(seed(sticky_tenants=True)) as (app, client, gateways):
        gateways.busy.add(SHANGHAI)
        await app.health.check_all()
        spilled = await client.get("/v1/languages", headers=acme)
        gateways.busy.clear()
        await app.health.check_all()
        kept, fresh = await client.get("/v1/languages", headers=acme), await client.get("/v1/languages", headers=other)
        gateways.busy.add(GUANGZHOU)
        await app.health.check_all()
        moved = await client.get("/v1/languages", headers=acme)
    clusters = [r.headers["x-peakgate-cluster"] for r in (spilled, kept, fresh, moved)]
    assert clusters == ["guangzhou", "guangzhou", "shanghai", "shanghai"]
    assert kept.headers["x-peakgate-spilled"] == "shanghai"


async def test_the_router_answers_its_own_get_endpoints_and_proxies_other_methods() -> None:
    async with harness() as (_app, client, gateways):
        scraped = await client.get("/metrics")
        posted = await client.post("/metrics")
    assert 'peakgate_router_cluster_load{cluster="shanghai"} 0.0' in scraped.text
    assert posted.status_code == 201 and [(g, r.url.path) for g, r in gateways.seen] == [(BEIJING, "/metrics")]


async def test_websockets_are_closed_not_proxied() -> None:
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "websocket.connect"}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async with harness() as (app, _client, gateways):
        await app({"type": "websocket", "path": "/v1/translate/ws", "headers": [], "query_string": b""}, receive,
                  send)
    assert sent == [{"type": "websocket.close", "code": 1008}] and not gateways.seen
    assert json.dumps(sent)  # plain data, nothing half-built
