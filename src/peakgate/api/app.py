"""The app factory: wiring only. Routes live in one module per dialect; errors map in `api.errors`."""

from __future__ import annotations

from typing import Any, Protocol

import msgspec
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Lifespan

from peakgate.api.contract import TranslationService
from peakgate.api.dashboard import dashboard_operations
from peakgate.api.deepl import deepl_operations
from peakgate.api.devmode import OpenModeEdge
from peakgate.api.documents import DocumentService, document_operations
from peakgate.api.endpoint import Operation, to_routes
from peakgate.api.errors import DEEPL, LIBRE, NATIVE, Dialect, error_response, http_error_response
from peakgate.api.glossaries import GlossaryService, glossary_operations
from peakgate.api.glossaries_v3 import glossary_v3_operations
from peakgate.api.image import image_operations
from peakgate.api.libre import libre_operations
from peakgate.api.native import native_operations
from peakgate.api.openapi import openapi_document
from peakgate.api.speech import speech_operations, speech_routes
from peakgate.api.stream import stream_operations, websocket_routes
from peakgate.clock import MonotonicClock
from peakgate.errors import Unauthorized
from peakgate.media.pool import MediaPool, closing, ladder_level

_LIBRE_PATHS = frozenset({"/translate", "/detect", "/languages"})


class Platform(TranslationService, GlossaryService, DocumentService, Protocol):
    """Everything the routes call (implemented by `peakgate.service.Service`)."""

    @property
    def open_mode(self) -> bool:
        """No API keys configured: every caller is served unauthenticated (see `api.devmode`)."""
        ...


def create_app(service: Platform, *, lifespan: Lifespan[Starlette] | None = None) -> Starlette:
    async def openapi(_request: Request) -> Response:
        return Response(document, media_type="application/json")

    # OCR and ASR run in their own processes, closed with the app (media/pool.py).
    media = MediaPool(service.settings.media, MonotonicClock(), service.metrics, ladder_level(service.metrics))
    operations = [
        *native_operations(service), *deepl_operations(service), *libre_operations(service),
        *glossary_operations(service), *glossary_v3_operations(service), *document_operations(service),
        *stream_operations(service), *dashboard_operations(service), *speech_operations(service, media),
        *image_operations(service, media),
        Operation("/openapi.json", ("GET",), openapi, NATIVE, "This OpenAPI 3.1 document", response=dict[str, Any]),
    ]
    document = msgspec.json.encode(openapi_document(operations))  # built once: the routes are fixed
    return Starlette(
        routes=[*to_routes(operations, service.metrics), *websocket_routes(service), *speech_routes(service, media)],
        exception_handlers={HTTPException: _routing_error},
        middleware=_open_mode_edge(service),
        lifespan=closing(media, lifespan),
    )


def _open_mode_edge(service: Platform) -> list[Middleware]:
    if not service.open_mode:
        return []
    refuse = service.settings.auth.refuse_deepl_like_keys_in_open_mode
    return [Middleware(OpenModeEdge, refuse_deepl_like_keys=refuse,
                       error_for=lambda path, message: error_response(_dialect_for(path), Unauthorized(message)))]


def _dialect_for(path: str) -> Dialect:
    if path.startswith(("/v2/", "/v3/")):
        return DEEPL
    return LIBRE if path in _LIBRE_PATHS else NATIVE


async def _routing_error(request: Request, exc: Exception) -> Response:
    # Unknown paths and wrong methods answer JSON in the dialect the path belongs to.
    assert isinstance(exc, HTTPException)  # registered for HTTPException only
    response = http_error_response(_dialect_for(request.url.path), exc.status_code, exc.detail)
    response.headers.update(exc.headers or {})
    return response
