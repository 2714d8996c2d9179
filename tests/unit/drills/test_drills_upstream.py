"""The drill's own upstream: the OpenAI chat-completions shape the gateway's backend calls, and its fail/recover
switch (the `fail-upstream` fault), checked through the gateway's real OpenAI backend."""

from __future__ import annotations

import httpx
import pytest

from peakgate.backends.base import DecodeOptions
from peakgate.backends.openai_backend import OpenAIBackend
from peakgate.drills.upstream import FailSwitch, app
from peakgate.errors import BackendError


async def _upper(text: str) -> str:
    return text.upper()


def _backend(switch: FailSwitch) -> OpenAIBackend:
    transport = httpx.ASGITransport(app=app(_upper, switch))
    return OpenAIBackend("up", "http://drill-upstream/v1", None, "drill", [("en", "es")], transport=transport)


async def test_the_gateways_backend_is_served_then_failed_then_served_again() -> None:
    switch = FailSwitch()
    backend = _backend(switch)
    await backend.start()  # a real round trip, as the gateway makes at start-up
    try:
        assert await backend.translate_batch(["Save file", "Open"], "en", "es", DecodeOptions()) == ["SAVE FILE",
                                                                                                    "OPEN"]
        switch.fail()
        with pytest.raises(BackendError, match="HTTP 500") as caught:
            await backend.translate_batch(["Save file"], "en", "es", DecodeOptions())
        assert caught.value.retry_after_s is None  # a broken upstream, not a busy one
        switch.recover()
        assert await backend.translate_batch(["Print"], "en", "es", DecodeOptions()) == ["PRINT"]
    finally:
        await backend.close()


@pytest.mark.parametrize(("body", "says"), [
    (b"{", "not a chat completion request"),
    (b'{"model": "m"}', "messages"),
    (b'{"model": "m", "messages": [{"role": "system", "content": "x"}]}', "no user message"),
])
async def test_a_malformed_request_is_a_400_saying_why(body: bytes, says: str) -> None:
    transport = httpx.ASGITransport(app=app(_upper, FailSwitch()))
    async with httpx.AsyncClient(transport=transport, base_url="http://drill-upstream") as client:
        answer = await client.post("/v1/chat/completions", content=body)
    assert answer.status_code == 400 and says in answer.json()["error"]["message"]


async def test_readiness_answers() -> None:
    transport = httpx.ASGITransport(app=app(_upper, FailSwitch()))
    async with httpx.AsyncClient(transport=transport, base_url="http://drill-upstream") as client:
        assert (await client.get("/readyz")).status_code == 200
