"""OpenAIBackend error mapping, health and fan-out, over httpx.MockTransport (no sockets)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Coroutine
from typing import Any

import httpx
import pytest

from peakgate.backends.base import DecodeOptions, Health
from peakgate.backends.openai_backend import OpenAIBackend, system_prompt
from peakgate.clock import FakeClock
from peakgate.errors import BackendError, ConfigError, Unavailable, UnsupportedPair

Handler = Callable[[httpx.Request], Coroutine[Any, Any, httpx.Response]]


def _ok(request: httpx.Request) -> httpx.Response:
    user = json.loads(request.content)["messages"][1]["content"]
    message = {"role": "assistant", "content": user.upper()}
    return httpx.Response(200, json={"choices": [{"index": 0, "message": message}]})


def _backend(handler: Handler, *, clock: FakeClock | None = None, max_batch_size: int = 4) -> OpenAIBackend:
    return OpenAIBackend(
        "llm", "http://llm.test/v1/", None, "m", [("en", "es")], timeout_s=5.0, max_batch_size=max_batch_size,
        clock=clock, transport=httpx.MockTransport(handler),
    )


def test_prompt_uses_language_names_and_falls_back_to_codes() -> None:
    assert "from English to Spanish." in system_prompt("en", "es")
    assert "from xx to Catalan." in system_prompt("xx", "ca")


async def test_posts_to_chat_completions_under_base_url_without_auth_when_no_key() -> None:
    seen: list[httpx.Request] = []

    async def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return _ok(request)

    backend = _backend(handler)
    await backend.start()
    assert await backend.translate_batch(["a", "b"], "en", "es", DecodeOptions()) == ["A", "B"]
    await backend.close()
    assert {str(r.url) for r in seen} == {"http://llm.test/v1/chat/completions"}
    assert all("authorization" not in r.headers for r in seen)


async def test_fan_out_is_bounded_by_max_batch_size() -> None:
    in_flight = peak = 0

    async def handler(request: httpx.Request) -> httpx.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await asyncio.sleep(0.001)
        in_flight -= 1
        return _ok(request)

    backend = _backend(handler, max_batch_size=2)
    await backend.start()
    out = await backend.translate_batch([f"s{i}" for i in range(7)], "en", "es", DecodeOptions())
    await backend.close()
    assert out == [f"S{i}" for i in range(7)]
    assert peak == 2


async def test_429_is_unavailable_with_retry_after_and_health_recovers() -> None:
    clock = FakeClock()
    busy = False

    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(429, headers={"Retry-After": "3"}, text="slow down") if busy else _ok(request)

    backend = _backend(handler, clock=clock)
    await backend.start()
    busy = True
    with pytest.raises(Unavailable, match="HTTP 429: slow down") as info:
        await backend.translate_batch(["a", "b"], "en", "es", DecodeOptions())
    assert info.value.retry_after_s == 3.0
    assert backend.health() is Health.DEGRADED
    clock.advance(31)
    assert backend.health() is Health.OK
    await backend.close()
    assert backend.health() is Health.DOWN


async def test_unreachable_upstream_is_unavailable() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    with pytest.raises(Unavailable, match="cannot reach") as info:
        await _backend(handler).start()
    assert isinstance(info.value.__cause__, httpx.ConnectError)


@pytest.mark.parametrize(
    "body", [{"choices": []}, {"choices": [{"message": {"content": None}}]}, ["not", "an", "object"]]
)
async def test_wrong_shape_is_backend_error(body: object) -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=body)

    with pytest.raises(BackendError, match="chat completion"):
        await _backend(handler).start()


async def test_refuses_unknown_pair_and_work_before_start() -> None:
    async def handler(request: httpx.Request) -> httpx.Response:
        return _ok(request)

    backend = _backend(handler)
    with pytest.raises(Unavailable):
        await backend.translate_batch(["a"], "en", "es", DecodeOptions())
    await backend.start()
    with pytest.raises(UnsupportedPair):
        await backend.translate_batch(["a"], "es", "en", DecodeOptions())
    await backend.close()


def test_needs_a_pair() -> None:
    with pytest.raises(ConfigError):
        OpenAIBackend("llm", "http://llm/v1", None, "m", [])
