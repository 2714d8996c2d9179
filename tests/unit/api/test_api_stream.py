"""Partial-then-final streaming (/v1/translate/stream SSE, /v1/translate/ws) against a fake with gated tiers.

Each fake tier can wait for another tier to have started or answered (asyncio Events), fail, or hang, so
the tests set the order of events without sleeping.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import pytest
from api_fakes import GOOD_KEY, FakeService, client
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from peakgate.api import stream
from peakgate.api.app import create_app
from peakgate.config import ModelConfig, PriorityClass, Settings
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.errors import BackendError, DeadlineExceeded, PeakgateError, QuotaExceeded

AUTH = {"Authorization": f"Bearer {GOOD_KEY}"}
BODY = {"segments": ["save the file"], "source": "en", "target": "es"}
Stage = Literal["started", "answered"]


def tiered_settings() -> Settings:
    models = tuple(ModelConfig(name=n, engine="echo", source="en", target="es") for n in ("t", "m", "l"))
    return Settings(models=models, tiers={"tiny": ("t",), "medium": ("m",), "large": ("l",)})


@dataclass
class TieredService(FakeService):
    """`translate` (admitted, billed) and `run` (trusted) answer per tier, as gated by the test."""

    settings: Settings = field(default_factory=tiered_settings)
    waits: dict[str, tuple[Stage, str]] = field(default_factory=dict)  # tier -> (stage, of which tier)
    fails: dict[str, PeakgateError] = field(default_factory=dict)
    hangs: set[str] = field(default_factory=set)
    calls: list[tuple[str, str]] = field(default_factory=list)  # (translate | run, tier)
    cancelled: list[str] = field(default_factory=list)
    stages: dict[tuple[Stage, str], asyncio.Event] = field(default_factory=dict)

    def _stage(self, stage: Stage, tier: str) -> asyncio.Event:
        return self.stages.setdefault((stage, tier), asyncio.Event())

    async def translate(self, request: TranslateRequest, principal: Principal) -> TranslateResult:
        if self.fail_with is not None:  # an admission refusal: raised before any engine work
            raise self.fail_with
        return await self._tier("translate", request, principal)

    async def run(self, request: TranslateRequest, principal: Principal, priority: PriorityClass) -> TranslateResult:
        return await self._tier("run", request, principal)

    async def _tier(self, kind: str, request: TranslateRequest, principal: Principal) -> TranslateResult:
        tier = request.tier or "medium"
        self.calls.append((kind, tier))
        self._stage("started", tier).set()
        try:
            if tier in self.waits:
                await self._stage(*self.waits[tier]).wait()
            if tier in self.hangs:
                await asyncio.Event().wait()
            if tier in self.fails:
                raise self.fails[tier]
            plain = await FakeService.translate(self, request, principal)
        except asyncio.CancelledError:
            self.cancelled.append(tier)
            raise
        finally:
            self._stage("answered", tier).set()
        texts = tuple(replace(t, text=f"{tier}:{t.text}") for t in plain.translations)
        return replace(plain, translations=texts)


def sse(service: TieredService, body: dict[str, Any] | bytes = BODY,
        headers: dict[str, str] | None = None) -> tuple[int, str, list[tuple[str, Any]]]:
    """POST the stream; (status, content type, [(event, data)])."""
    kwargs: dict[str, Any] = {"content": body} if isinstance(body, bytes) else {"json": body}
    with client(service).stream("POST", "/v1/translate/stream", headers=AUTH if headers is None else headers,
                                **kwargs) as reply:
        text = reply.read().decode()
        events = []
        if reply.headers["content-type"].startswith("text/event-stream"):
            for frame in filter(None, text.split("\n\n")):
                lines = dict(line.split(": ", 1) for line in frame.splitlines())
                events.append((lines["event"], json.loads(lines["data"])))
        return reply.status_code, reply.headers["content-type"], events if events else [("json", json.loads(text))]


def test_partial_then_final_then_done_billing_the_final_only() -> None:
    service = TieredService(waits={"medium": ("answered", "tiny")})
    status, media_type, events = sse(service)
    assert (status, media_type.split(";")[0]) == (200, "text/event-stream")
    assert [name for name, _ in events] == ["partial", "final", "done"]
    partial, final = events[0][1], events[1][1]
    assert partial == {"type": "partial", "tier": "tiny", "final": False, "translations": [
        {"text": "tiny:SAVE THE FILE", "detected_source": "en", "model": "fake-en-es", "tier": "tiny"}]}
    assert (final["tier"], final["final"], final["billed_characters"]) == ("medium", True, 13)
    assert final["translations"][0]["text"] == "medium:SAVE THE FILE"
    assert "degraded" not in final
    assert sorted(service.calls) == [("run", "tiny"), ("translate", "medium")]  # billed once, via translate


def test_both_tiers_run_at_once() -> None:
    # Sequential tiers would deadlock here: tiny answers only once medium has started.
    service = TieredService(waits={"tiny": ("started", "medium"), "medium": ("answered", "tiny")})
    assert [name for name, _ in sse(service)[2]] == ["partial", "final", "done"]


def test_a_final_ready_first_skips_the_partial_and_cancels_it() -> None:
    service = TieredService(waits={"medium": ("started", "tiny")}, hangs={"tiny"})
    events = sse(service)[2]
    assert [name for name, _ in events] == ["final", "done"]
    assert events[0][1]["tier"] == "medium"
    assert service.cancelled == ["tiny"]


@pytest.mark.parametrize(("tier", "served"), [("tiny", "tiny"), ("fast", "tiny"), ("quality", "large"),
                                              ("large", "large"), (None, "medium")])
def test_the_final_tier_follows_the_request_and_same_tier_sends_final_only(tier: str | None, served: str) -> None:
    service = TieredService(waits={} if served == "tiny" else {served: ("answered", "tiny")})
    events = sse(service, {**BODY, "tier": tier})[2]
    assert events[-2][1]["tier"] == served
    assert [name for name, _ in events] == (["final", "done"] if served == "tiny" else ["partial", "final", "done"])
    assert ("translate", served) in service.calls


def test_no_configured_tiers_means_one_tier_and_no_partial() -> None:
    service = TieredService(settings=Settings())
    assert [name for name, _ in sse(service)[2]] == ["final", "done"]
    assert service.calls == [("translate", "medium")]


def test_a_service_without_a_trusted_path_sends_final_only() -> None:
    service = FakeService(settings=tiered_settings())  # no `run`: a partial would have to be billed
    with client(service).stream("POST", "/v1/translate/stream", json=BODY, headers=AUTH) as reply:
        assert reply.read().decode().startswith("event: final\n")
    assert [r.tier for r in service.requests] == ["medium"]


def test_an_explicit_model_sends_final_only() -> None:
    service = TieredService()
    assert [name for name, _ in sse(service, {**BODY, "model": "m"})[2]] == ["final", "done"]


@pytest.mark.parametrize("error", [BackendError("engine crashed"), DeadlineExceeded("too slow")])
def test_a_failing_higher_tier_degrades_the_final_to_the_partial(error: PeakgateError) -> None:
    service = TieredService(waits={"medium": ("answered", "tiny")}, fails={"medium": error})
    events = sse(service)[2]
    assert [name for name, _ in events] == ["partial", "final", "done"]
    final = events[1][1]
    assert (final["final"], final["degraded"], final["tier"]) == (True, True, "tiny")
    assert final["translations"] == events[0][1]["translations"]
    assert final["error"] == {"code": error.code, "message": error.message}
    assert "billed_characters" not in final  # the service bills only what it delivered


def test_a_higher_tier_failing_before_the_partial_still_degrades_to_it() -> None:
    service = TieredService(waits={"tiny": ("answered", "medium")}, fails={"medium": BackendError("down")})
    assert [(name, data.get("degraded")) for name, data in sse(service)[2]] == [
        ("partial", None), ("final", True), ("done", None)]


def test_a_hung_higher_tier_is_cut_at_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stream, "_GRACE_S", 0.0)
    service = TieredService(hangs={"medium"})
    events = sse(service, {**BODY, "deadline_ms": 20})[2]
    assert [name for name, _ in events] == ["partial", "final", "done"]
    assert events[1][1]["error"]["code"] == "deadline_exceeded"
    assert service.cancelled == ["medium"]


def test_a_failing_fast_tier_sends_the_final_only() -> None:
    service = TieredService(waits={"medium": ("answered", "tiny")}, fails={"tiny": BackendError("apertium died")})
    events = sse(service)[2]
    assert [name for name, _ in events] == ["final", "done"]
    assert events[0][1]["tier"] == "medium"


def test_both_tiers_failing_answer_json_like_translate() -> None:
    service = TieredService(fails={"tiny": BackendError("a"), "medium": BackendError("b")})
    status, media_type, events = sse(service)
    assert (status, media_type) == (502, "application/json")
    assert events == [("json", {"error": {"code": "backend_error", "message": "b"}})]


@pytest.mark.parametrize(("body", "headers", "status", "code"), [
    (b"{not json", AUTH, 400, "bad_request"),
    ({"target": "es"}, AUTH, 400, "bad_request"),
    (BODY, {"Authorization": "Bearer wrong"}, 401, "unauthorized"),
    (BODY, {}, 401, "unauthorized"),
    ({**BODY, "target": "xx"}, AUTH, 400, "unsupported_language_pair"),
])
def test_errors_before_the_stream_answer_json(body: dict[str, Any] | bytes, headers: dict[str, str], status: int,
                                              code: str) -> None:
    service = TieredService()
    reply_status, media_type, events = sse(service, body, headers)
    assert (reply_status, media_type) == (status, "application/json")
    assert events[0][1]["error"]["code"] == code


def test_a_refused_request_gets_no_free_partial() -> None:
    service = TieredService(fail_with=QuotaExceeded("quota spent"))
    status, _, events = sse(service)
    assert (status, events[0][1]["error"]["code"]) == (402, "quota_exceeded")
    assert service.calls == []  # the trusted path never started


def test_stream_requests_are_counted_in_the_metrics() -> None:
    service = TieredService()
    sse(service)
    assert 'endpoint="/v1/translate/stream",status="200"' in service.metrics.render().decode()


async def test_a_client_leaving_mid_stream_cancels_the_higher_tier() -> None:
    service = TieredService(hangs={"medium"})
    app = create_app(service)
    left = asyncio.Event()
    bodies: list[bytes] = []
    messages = iter([{"type": "http.request", "body": json.dumps(BODY).encode()}])

    async def receive() -> dict[str, Any]:
        if (message := next(messages, None)) is not None:
            return message
        await left.wait()
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.body" and message.get("body"):
            bodies.append(message["body"])
            left.set()  # the client goes away once the partial is in

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
             "method": "POST", "path": "/v1/translate/stream", "raw_path": b"/v1/translate/stream",
             "query_string": b"", "headers": [(b"authorization", f"Bearer {GOOD_KEY}".encode())],
             "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80), "scheme": "http", "root_path": ""}
    await asyncio.wait_for(app(scope, receive, send), timeout=5)
    assert bodies[0].startswith(b"event: partial")
    assert service.cancelled == ["medium"]


def ws_client(service: TieredService) -> TestClient:
    return TestClient(create_app(service))


def test_websocket_answers_several_requests_and_survives_bad_json() -> None:
    service = TieredService(waits={"medium": ("answered", "tiny")})
    with ws_client(service).websocket_connect(f"/v1/translate/ws?api_key={GOOD_KEY}") as ws:
        ws.send_text(json.dumps(BODY))
        first = [ws.receive_json(), ws.receive_json()]
        ws.send_text("{oops")
        error = ws.receive_json()
        ws.send_text(json.dumps({**BODY, "segments": ["open it"], "target": "xx"}))
        unsupported = ws.receive_json()
        ws.send_text(json.dumps({**BODY, "segments": ["open it"], "tier": "tiny"}))
        same_tier = ws.receive_json()
    assert [(m["type"], m["tier"]) for m in first] == [("partial", "tiny"), ("final", "medium")]
    assert first[1]["billed_characters"] == 13
    assert (error["type"], error["code"]) == ("error", "bad_request")
    assert "JSON" in error["message"]
    assert (unsupported["type"], unsupported["code"]) == ("error", "unsupported_language_pair")
    assert (same_tier["type"], same_tier["translations"][0]["text"]) == ("final", "tiny:OPEN IT")
    rendered = service.metrics.render().decode()
    assert 'requests_total{endpoint="/v1/translate/ws",status="200",tier="medium"} 1.0' in rendered
    assert 'requests_total{endpoint="/v1/translate/ws",status="400",tier="medium"} 1.0' in rendered  # the xx pair
    assert 'requests_total{endpoint="/v1/translate/ws",status="400",tier="none"} 1.0' in rendered  # bad JSON


def test_websocket_takes_the_authorization_header() -> None:
    with ws_client(TieredService()).websocket_connect("/v1/translate/ws", headers=AUTH) as ws:
        ws.send_text(json.dumps({**BODY, "tier": "tiny"}))
        assert ws.receive_json()["type"] == "final"


@pytest.mark.parametrize("path", ["/v1/translate/ws", "/v1/translate/ws?api_key=wrong"])
def test_websocket_closes_4401_on_a_bad_key(path: str) -> None:
    with ws_client(TieredService()).websocket_connect(path) as ws, pytest.raises(WebSocketDisconnect) as closed:
        ws.receive_text()
    assert closed.value.code == 4401


def test_websocket_close_cancels_the_outstanding_tier() -> None:
    service = TieredService(hangs={"medium"})
    with ws_client(service).websocket_connect(f"/v1/translate/ws?api_key={GOOD_KEY}") as ws:
        ws.send_text(json.dumps(BODY))
        assert ws.receive_json()["type"] == "partial"
    assert service.cancelled == ["medium"]
