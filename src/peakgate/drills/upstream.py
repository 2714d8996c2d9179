"""The drill's own remote-LLM upstream: an OpenAI-compatible chat-completions server on 127.0.0.1 that translates
with a real Apertium pipeline, and answers HTTP 500 on demand (the `fail-upstream` fault).

    python -m peakgate.drills.upstream --port P [--mode eng-spa --source en --target es]

SIGUSR1 makes it fail every chat completion, SIGUSR2 makes it serve again: the drill's injector signals it as it
signals pipelines, and nothing but the drill's own gateway ever calls it. Apertium, not an echo: the gateway's
quality estimation re-translates output still in the source language, which would double the load it measures.
"""

from __future__ import annotations

import argparse
import asyncio
import signal
from collections.abc import Awaitable, Callable

import msgspec
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from peakgate.backends.apertium import ApertiumBackend
from peakgate.backends.base import DecodeOptions

Translate = Callable[[str], Awaitable[str]]
HOST = "127.0.0.1"  # never anything else: the drill's upstream is local by construction
FAILED_STATUS = 500  # a broken upstream, no Retry-After: the gateway's breaker and fallbacks must cover it


class FailSwitch:
    """Whether the upstream fails right now."""

    def __init__(self) -> None:
        self.failing = False

    def fail(self) -> None:
        self.failing = True

    def recover(self) -> None:
        self.failing = False


class _Message(msgspec.Struct):
    role: str
    content: str


class _ChatRequest(msgspec.Struct):
    model: str
    messages: list[_Message]


def _json(status: int, body: object) -> Response:
    return Response(msgspec.json.encode(body), status_code=status, media_type="application/json")


def _error(status: int, message: str) -> Response:
    return _json(status, {"error": {"message": message, "type": "drill_upstream"}})


def app(translate: Translate, switch: FailSwitch) -> Starlette:
    """`POST /v1/chat/completions` (the last user message translated) and `GET /readyz`."""

    async def completions(request: Request) -> Response:
        if switch.failing:
            return _error(FAILED_STATUS, "drill: upstream failing on purpose")
        try:
            chat = msgspec.json.decode(await request.body(), type=_ChatRequest)
        except msgspec.DecodeError as exc:
            return _error(400, f"not a chat completion request: {exc}")
        user = [m.content for m in chat.messages if m.role == "user"]
        if not user:
            return _error(400, "no user message to translate")
        text = await translate(user[-1])
        return _json(200, {"object": "chat.completion", "model": chat.model, "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}]})

    async def ready(_request: Request) -> Response:
        return _json(200, {"ready": True})

    return Starlette(routes=[Route("/v1/chat/completions", completions, methods=["POST"]),
                             Route("/readyz", ready, methods=["GET"])])


async def serve(port: int, mode: str, source: str, target: str) -> None:
    import uvicorn

    engine = ApertiumBackend(f"drill-upstream-{mode}", mode, source, target, pipelines=2)
    await engine.start()
    options = DecodeOptions()

    async def translate(text: str) -> str:
        return (await engine.translate_batch([text], source, target, options))[0]

    switch = FailSwitch()
    loop = asyncio.get_running_loop()
    # Installed before the port opens: SIGUSR1's default action would end the process.
    loop.add_signal_handler(signal.SIGUSR1, switch.fail)
    loop.add_signal_handler(signal.SIGUSR2, switch.recover)
    server = uvicorn.Server(uvicorn.Config(app(translate, switch), host=HOST, port=port, log_level="warning",
                                           lifespan="off"))
    try:
        await server.serve()
    finally:
        await engine.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m peakgate.drills.upstream", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--mode", default="eng-spa")
    parser.add_argument("--source", default="en")
    parser.add_argument("--target", default="es")
    args = parser.parse_args(argv)
    asyncio.run(serve(args.port, args.mode, args.source, args.target))


if __name__ == "__main__":
    main()
