"""One operation = route + handler + its OpenAPI description; wrapping adds error mapping and metrics.

Handlers stay thin (parse → service → serialize) and raise `PeakgateError`s; the wrapper turns those into
the operation's dialect and records `requests` / `request_latency` under the route template, so label
cardinality is bounded by the route table. A translate handler records the tier that served it with
`set_served`; every other request is labelled `NO_TIER`. A result served degraded carries the ladder's
level in the `X-Peakgate-Degraded` header, and one translated through a pivot language that language in
`X-Peakgate-Pivot`, whatever the dialect (the DeepL and LibreTranslate bodies have no field for either).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Annotated

import msgspec
from prometheus_client import Counter, Histogram
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from peakgate.api.errors import Dialect, error_response
from peakgate.domain import TranslateResult
from peakgate.errors import PeakgateError
from peakgate.observe.metrics import NO_TENANT, SERVING_ENDPOINT, SERVING_TENANT, Metrics

_log = logging.getLogger(__name__)

Handler = Callable[[Request], Awaitable[Response]]
NO_TIER = "none"
JSON_BODY = ("application/json",)
FORM_BODIES = ("application/json", "application/x-www-form-urlencoded", "multipart/form-data")
UPLOAD = ("multipart/form-data",)
# A multipart part that carries a file, in an Operation's `request` type (OpenAPI 3.1 spells binary so).
FilePart = Annotated[str, msgspec.Meta(extra_json_schema={"contentMediaType": "application/octet-stream"})]


@dataclass(frozen=True, slots=True)
class Operation:
    path: str
    methods: tuple[str, ...]
    handler: Handler
    dialect: Dialect
    summary: str
    request: type[msgspec.Struct] | None = None  # the body / form / query fields it reads
    response: object = None  # msgspec type of the JSON answer (of each event's data in an event stream)
    consumes: tuple[str, ...] = JSON_BODY  # body media types it takes (GET and DELETE read query fields)
    produces: tuple[str, ...] = JSON_BODY  # media types it answers in; () for no body at all
    statuses: tuple[int, ...] = (200,)  # the statuses that answer with that, not with a dialect error
    auth: bool = False
    accepted: object = None  # msgspec type of a 202 (JSON, with `Location`), when it may answer with an async job


DEGRADED_HEADER = "X-Peakgate-Degraded"
PIVOT_HEADER = "X-Peakgate-Pivot"


def set_served(request: Request, result: TranslateResult) -> None:
    request.state.tier = result.translations[0].tier if result.translations else NO_TIER
    request.state.degraded = result.degraded
    request.state.pivot = next((t.pivot for t in result.translations if t.pivot), None)


def to_routes(operations: Iterable[Operation], metrics: Metrics) -> list[Route]:
    """One route per path, however many operations share it.

    Starlette answers a wrong method with the first route whose path matches, and that route's methods in
    `Allow`: separate routes for GET and DELETE on one path would hide DELETE from a PUT's 405.
    """
    by_path: dict[str, dict[str, Handler]] = {}
    for operation in operations:
        endpoint = _endpoint(operation, metrics)
        handlers = by_path.setdefault(operation.path, {})
        for method in operation.methods:
            if method in handlers:
                raise ValueError(f"{method} {operation.path} is declared twice")
            handlers[method] = endpoint
    return [Route(path, _by_method(handlers), methods=list(handlers)) for path, handlers in by_path.items()]


def to_route(operation: Operation, metrics: Metrics) -> Route:
    """A route for one operation alone (apps built from a single module's operations)."""
    return Route(operation.path, _endpoint(operation, metrics), methods=list(operation.methods))


def _by_method(handlers: Mapping[str, Handler]) -> Handler:
    distinct = set(handlers.values())
    if len(distinct) == 1:  # the common case: no dispatch on the hot path
        return distinct.pop()

    async def dispatch(request: Request) -> Response:
        # The route lets through only these methods, and HEAD (added by Starlette wherever GET is): GET's.
        return await (handlers.get(request.method) or handlers["GET"])(request)

    return dispatch


def _endpoint(operation: Operation, metrics: Metrics) -> Handler:
    # Labelled children cached per (tier, status, tenant): prometheus-client's `labels()` costs more than a hit.
    children: dict[tuple[str, str, str], tuple[Counter, Histogram, Counter]] = {}

    def observe(tier: str, status: str, tenant: str, seconds: float) -> None:
        child = children.get((tier, status, tenant))
        if child is None:
            child = children[(tier, status, tenant)] = (
                metrics.requests.labels(operation.path, tier, status),
                metrics.request_latency.labels(operation.path, tier),
                metrics.tenant_requests.labels(tenant, operation.path, status),
            )
        child[0].inc()
        child[1].observe(seconds)
        child[2].inc()

    async def endpoint(request: Request) -> Response:
        started = time.perf_counter()
        token = SERVING_ENDPOINT.set(operation.path)  # the `endpoint` label of the engine work it causes
        tenant_token = SERVING_TENANT.set(NO_TENANT)  # admission sets the tenant once the key is known
        try:
            response = await operation.handler(request)
        except PeakgateError as exc:
            response = error_response(operation.dialect, exc)
        except Exception:  # every error answers in the dialect's JSON, never Starlette's plain text
            _log.exception("unhandled error serving %s", operation.path)
            response = error_response(operation.dialect, PeakgateError("internal server error"))
        finally:
            SERVING_ENDPOINT.reset(token)
        tenant = SERVING_TENANT.get()
        SERVING_TENANT.reset(tenant_token)
        tier = str(getattr(request.state, "tier", NO_TIER))
        degraded = getattr(request.state, "degraded", None)
        if degraded:
            response.headers[DEGRADED_HEADER] = str(degraded)
        pivot = getattr(request.state, "pivot", None)
        if pivot:
            response.headers[PIVOT_HEADER] = str(pivot)
        observe(tier, str(response.status_code), tenant, time.perf_counter() - started)
        return response

    return endpoint
