"""The /v1/speech/stream socket on a fake service and pool: close codes and reasons for every refusal."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from starlette.websockets import WebSocketDisconnect

from peakgate.api.contract import Language
from peakgate.api.speech import NoStart, first_message, speech_routes
from peakgate.clock import FakeClock
from peakgate.config import Settings
from peakgate.domain import Principal, TranslateRequest, TranslateResult, Translation
from peakgate.errors import Overloaded, Unauthorized
from peakgate.media.asr import Word, hypothesis
from peakgate.observe.metrics import Metrics

KEY = "speech-key"


@dataclass
class Service:
    settings: Settings = field(default_factory=Settings)
    metrics: Metrics = field(default_factory=Metrics)

    def authenticate(self, key: str | None) -> Principal:
        if key != KEY:
            raise Unauthorized("invalid API key")
        return Principal(key=key, tenant="t", priority="interactive")

    def languages(self) -> list[Language]:
        return [Language("en", "English", ("es",))]

    async def translate(self, request: TranslateRequest, principal: Principal) -> TranslateResult:
        return TranslateResult(tuple(Translation(s.upper(), "en", "m", "medium") for s in request.segments), 0)


@dataclass
class Pool:
    stream_on: bool = True
    full: bool = False

    async def run(self, kind: str, units: float, fn: Callable[..., Any], *args: object) -> Any:
        if self.full:
            raise Overloaded("the asr queue is full", retry_after_s=3.0)
        return "hello" if fn is hypothesis else (Word("hello", 0.1, 0.4), Word("world", 0.5, 0.9))

    def allows(self, feature: str) -> bool:
        return self.stream_on


def closed_with(pool: Pool, *messages: str | bytes, key: str = KEY, service: Service | None = None
                ) -> tuple[list[dict[str, Any]], int, str]:
    app = Starlette(routes=speech_routes(service or Service(), pool))  # type: ignore[arg-type]
    received: list[dict[str, Any]] = []
    with TestClient(app).websocket_connect(f"/v1/speech/stream?api_key={key}") as ws:
        for message in messages:
            ws.send_bytes(message) if isinstance(message, bytes) else ws.send_text(message)
        with pytest.raises(WebSocketDisconnect) as closed:
            while True:
                received.append(json.loads(ws.receive_text()))
    return received, closed.value.code, closed.value.reason


START = json.dumps({"type": "start", "target": "es", "sample_rate": 16000})
SPEECH = b"".join([bytes(3200)] * 3) + b"\x00\x30" * 16000  # a quiet lead-in, then a loud second


def streams(service: Service, status: int) -> float | None:
    return service.metrics.registry.get_sample_value(
        "peakgate_requests_total", {"endpoint": "/v1/speech/stream", "tier": "none", "status": str(status)})


def test_a_stream_ends_with_a_final_and_a_normal_close() -> None:
    service = Service()
    received, code, _ = closed_with(Pool(), START, SPEECH[:32000], SPEECH[32000:], json.dumps({"type": "end"}),
                                    service=service)
    assert received[-1]["type"] == "final" and received[-1]["translation"] == "HELLO WORLD"
    assert code == 1000
    assert streams(service, 200) == 1


def test_streaming_off_on_the_ladder_closes_1013_with_a_reason() -> None:
    service = Service()
    _, code, reason = closed_with(Pool(stream_on=False), service=service)
    assert code == 1013 and "POST /v1/speech" in reason
    assert streams(service, 503) == 1


def test_a_bad_key_closes_4401() -> None:
    _, code, reason = closed_with(Pool(), key="wrong")
    assert (code, reason) == (4401, "invalid API key")


@pytest.mark.parametrize(("start", "says"), [
    ("not json", "invalid start message"),
    (json.dumps({"type": "start", "target": "es", "source": "de"}), "understands en only"),
    (json.dumps({"type": "start", "target": "es", "sample_rate": 100}), "8000..48000"),
])
def test_a_bad_start_is_an_error_then_1008(start: str, says: str) -> None:
    received, code, _ = closed_with(Pool(), start)
    assert received[0]["type"] == "error" and says in received[0]["message"]
    assert code == 1008


def test_oversized_chunks_close_1009_and_a_full_pool_1013() -> None:
    received, code, _ = closed_with(Pool(), START, bytes(70_000))
    assert (received[0]["code"], code) == ("input_too_large", 1009)
    received, code, _ = closed_with(Pool(full=True), START, SPEECH, json.dumps({"type": "end"}))
    assert (received[-1]["code"], code) == ("overloaded", 1013)


async def _silent() -> dict[str, Any]:
    """A client that connected and sends nothing."""
    await asyncio.Event().wait()
    return {}


async def test_the_start_message_is_awaited_only_until_its_timeout_on_the_clock() -> None:
    clock = FakeClock()
    waiting = asyncio.create_task(first_message(_silent, clock, 10.0))
    await asyncio.sleep(0)
    assert clock.sleepers == 1  # the deadline is set as soon as the wait starts
    clock.advance(9.9)
    await asyncio.sleep(0)
    assert not waiting.done()
    clock.advance(0.1)
    with pytest.raises(NoStart, match="no start message within 10 s"):
        await waiting


async def test_a_start_message_in_time_is_returned_and_a_cancelled_wait_stays_cancelled() -> None:
    clock = FakeClock()

    async def prompt() -> dict[str, Any]:
        return {"text": "start"}

    assert await first_message(prompt, clock, 10.0) == {"text": "start"}
    assert clock.sleepers == 0  # its deadline is gone with it
    waiting = asyncio.create_task(first_message(_silent, clock, 10.0))
    await asyncio.sleep(0)
    waiting.cancel()
    with pytest.raises(asyncio.CancelledError):
        await waiting
    assert clock.sleepers == 0
