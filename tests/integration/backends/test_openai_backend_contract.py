"""CONTRACT TEST: OpenAIBackend against a local stub of `/v1/chat/completions`.

The stub (`openai_stub.py`: Starlette on uvicorn, 127.0.0.1, a background thread) answers in the real
chat-completion shape. The first tests check that shape with the official `openai` client, so the stub is pinned to
the real API and the backend tests after them exercise a faithful upstream. The stub's behaviour is
picked by the requested model name: `stub-ok`, `stub-500`, `stub-slow`, `stub-malformed`.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion
from openai_stub import SLOW_S, STARTUP_S, Stub, running_stub

from peakgate.backends.base import DecodeOptions, Health
from peakgate.backends.openai_backend import OpenAIBackend
from peakgate.errors import BackendError, EngineTimeout, Unavailable

# Only the slow-upstream test needs a short bound; the others get a generous one so a loaded CI runner
# (the stub shares two cores with the suite) is not mistaken for a slow upstream.
TIMEOUT_S = 0.2
API_KEY = "sk-contract-test"


@pytest.fixture(scope="module")
def stub() -> Iterator[Stub]:
    with running_stub() as running:
        yield running


@pytest.fixture
def requests_seen(stub: Stub) -> list[tuple[dict[str, str], dict[str, Any]]]:
    stub.requests.clear()
    return stub.requests


def _backend(stub: Stub, model: str = "stub-ok", timeout_s: float = STARTUP_S) -> OpenAIBackend:
    return OpenAIBackend("llm", stub.base_url, API_KEY, model, [("en", "es")], timeout_s=timeout_s, max_batch_size=4)


@pytest.fixture
async def backend(stub: Stub) -> AsyncIterator[OpenAIBackend]:
    b = _backend(stub)
    await b.start()
    yield b
    await b.close()


def test_contract_official_openai_client_parses_the_stub_response(stub: Stub) -> None:
    with openai.OpenAI(base_url=stub.base_url, api_key=API_KEY, max_retries=0) as client:
        completion = client.chat.completions.create(
            model="stub-ok", messages=[{"role": "user", "content": "Open the file"}]
        )
    assert completion.choices[0].message.content == "ES[Open the file]\n"
    assert completion.choices[0].finish_reason == "stop"


def test_contract_stub_response_validates_strictly_against_openai_types(stub: Stub) -> None:
    response = httpx.post(
        f"{stub.base_url}/chat/completions",
        json={"model": "stub-ok", "messages": [{"role": "user", "content": "Hi"}]}, timeout=STARTUP_S,
    )
    ChatCompletion.model_validate(response.json(), strict=True)  # client parsing alone is lenient


async def test_contract_backend_translates_through_the_stub(
    backend: OpenAIBackend, requests_seen: list[tuple[dict[str, str], dict[str, Any]]]
) -> None:
    out = await backend.translate_batch(["Open the file", "", "Save"], "en", "es", DecodeOptions())
    assert out == ["ES[Open the file]", "", "ES[Save]"]  # trailing newline stripped, empty never sent
    assert len(requests_seen) == 2
    assert backend.health() is Health.OK


async def test_contract_backend_prompt_names_the_languages_and_sends_the_key(
    backend: OpenAIBackend, requests_seen: list[tuple[dict[str, str], dict[str, Any]]]
) -> None:
    await backend.translate_batch(["Open the file"], "en", "es", DecodeOptions(max_decoding_length=64))
    [(headers, body)] = requests_seen
    assert headers["authorization"] == f"Bearer {API_KEY}"
    assert body["model"] == "stub-ok" and body["max_tokens"] == 64
    system, user = body["messages"]
    assert system["role"] == "system" and "from English to Spanish" in system["content"]
    assert user == {"role": "user", "content": "Open the file"}


async def test_contract_backend_http_500_is_backend_error(stub: Stub) -> None:
    b = _backend(stub, "stub-500")
    with pytest.raises(BackendError, match="HTTP 500") as info:
        await b.start()
    assert not isinstance(info.value, Unavailable)  # a 500 is a failure, not "busy, retry later"
    assert b.health() is Health.DOWN  # a failed start leaves nothing open


async def test_contract_backend_slow_upstream_is_engine_timeout(stub: Stub) -> None:
    b = _backend(stub, "stub-slow", TIMEOUT_S)
    started = time.monotonic()
    with pytest.raises(EngineTimeout):
        await b.start()
    assert time.monotonic() - started < SLOW_S


async def test_contract_backend_malformed_json_is_backend_error(stub: Stub) -> None:
    b = _backend(stub, "stub-malformed")
    with pytest.raises(BackendError, match="malformed"):
        await b.start()
