"""The baseline: one request at a time over the same engine, the way LibreTranslate serves (no batching).

`python -m bench.naive_server --port P` serves `POST /v1/translate` (same body as peakgate's) and `/readyz`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
from collections.abc import AsyncIterator

import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from peakgate.backends.base import DecodeOptions
from peakgate.backends.factory import build_backend
from peakgate.config import REPO_MODELS_DIR, default_models

URGENT = DecodeOptions(urgent=True)


def make_app(model: str) -> Starlette:
    config = next(m for m in default_models() if m.name == model)
    backend = build_backend(config, REPO_MODELS_DIR)
    lock = asyncio.Lock()

    async def translate(request: Request) -> Response:
        body = await request.json()
        async with lock:  # one request on the engine at a time, on a replica at the server's own priority
            texts = await backend.translate_batch(body["segments"], config.source, config.target, URGENT)
        return JSONResponse({"translations": [{"text": t} for t in texts]})

    async def ready(_request: Request) -> Response:
        return JSONResponse({"ready": True})

    @contextlib.asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        await backend.start()
        yield
        await backend.close()

    return Starlette(routes=[Route("/v1/translate", translate, methods=["POST"]), Route("/readyz", ready)],
                     lifespan=lifespan)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--model", default="student-en-es-int8")
    args = parser.parse_args()
    uvicorn.run(make_app(args.model), host="127.0.0.1", port=args.port, loop="uvloop", http="httptools",
                log_level="warning")


if __name__ == "__main__":
    main()
