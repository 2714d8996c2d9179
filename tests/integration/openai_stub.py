"""CONTRACT STUB of an OpenAI-compatible `/v1/chat/completions` upstream (Starlette on uvicorn, 127.0.0.1, a
background thread), answering in the real chat-completion shape; `test_openai_backend_contract.py` pins that
shape with the official `openai` client.

Behaviour by requested model name: `stub-500`, `stub-malformed`, `stub-slow`, anything else answers
`ES[<text>]`; `Stub.failing` makes every call a 500 (an upstream that goes bad and recovers).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from bench._http import serve_in_thread

SLOW_S = 1.0
STARTUP_S = 10.0


def _completion(model: str, content: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-stub",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


@dataclass
class Stub:
    base_url: str
    requests: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)  # (headers, body)
    failing: bool = False


def _app(stub: Stub) -> Starlette:
    async def chat_completions(request: Request) -> Response:
        body = await request.json()
        stub.requests.append((dict(request.headers), body))
        model = body["model"]
        if model == "stub-500" or stub.failing:
            return PlainTextResponse("upstream exploded", status_code=500)
        if model == "stub-malformed":
            return PlainTextResponse("{not json", media_type="application/json")
        if model == "stub-slow":
            await asyncio.sleep(SLOW_S)
        user_text = next(m["content"] for m in body["messages"] if m["role"] == "user")
        return JSONResponse(_completion(model, f"ES[{user_text}]\n"))

    return Starlette(routes=[Route("/v1/chat/completions", chat_completions, methods=["POST"])])


@contextlib.contextmanager
def running_stub() -> Iterator[Stub]:
    stub = Stub(base_url="")
    with serve_in_thread(_app(stub), STARTUP_S) as url:
        stub.base_url = f"{url}/v1"
        yield stub
