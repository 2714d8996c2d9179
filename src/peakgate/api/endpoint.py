"""One operation = route + handler + its OpenAPI description; wrapping adds error mapping and metrics.

Handlers stay thin (parse → service → serialize) and raise `PeakgateError`s; the wrapper turns those into
the operation's dialect and records `requests` / `request_latency` under the route template, so label
cardinality is bounded by the route table. A translate handler records the tier that served it with
`set_served`; every other request is labelled `NO_TIER`. A result served degraded carries the ladder's
level in the `X-Peakgate-Degraded` header, whatever the dialect.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import msgspec
from prometheus_client import Counter, Histogram
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from peakgate.api.errors import Dialect, error_response
from peakgate.domain import TranslateResult
from peakgate.errors import PeakgateError
from peakgate.observe.metrics import Metrics

_log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Response]]
NO_TIER = "none"


@dataclass(frozen=True, slots=True)
class Operation:
    path: str
    methods: tuple[str, ...]
    handler: Handler
    dialect: Dialect
    summary: str
    request: type[msgspec.Struct] | None = None  # the body / form / query fields it reads
    response: object = None  # msgspec-typed JSON response body; None for a non-JSON answer
    forms: bool = False  # also takes form bodies and query fields, not only JSON
    auth: bool = False


DEGRADED_HEADER = "X-Peakgate-Degraded"


def set_served(request: Request, result: TranslateResult) -> None:
    request.state.tier = result.translations[0].tier if result.translations else NO_TIER
    request.state.degraded = result.degraded


def to_route(operation: Operation, metrics: Metrics) -> Route:
    # Labelled children cached per (tier, status): prometheus-client's `labels()` costs more than a cache hit.
    children: dict[tuple[str, str], tuple[Counter, Histogram]] = {}

    def observe(tier: str, status: str, seconds: float) -> None:
        child = children.get((tier, status))
        if child is None:
            child = children[(tier, status)] = (
                metrics.requests.labels(operation.path, tier, status),
                metrics.request_latency.labels(operation.path, tier),
            )
        child[0].inc()
        child[1].observe(seconds)

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        try:
            response = await operation.handler(request)
        except PeakgateError as exc:
            response = error_response(operation.dialect, exc)
        except Exception:  # every error answers in the dialect's JSON, never Starlette's plain text
            _log.exception("unhandled error serving %s", operation.path)
            response = error_response(operation.dialect, PeakgateError("internal server error"))
        tier = str(getattr(request.state, "tier", NO_TIER))
        degraded = getattr(request.state, "degraded", None)
        if degraded:
            response.headers[DEGRADED_HEADER] = str(degraded)
        observe(tier, str(response.status_code), time.perf_counter() - started)
        return response

    return Route(operation.path, endpoint, methods=list(operation.methods))
