"""The OpenAPI 3.1 document, generated from the operation table and the msgspec Structs the handlers use.

Built from the same `Operation`s the router serves, so the document cannot drift from the routes: path
parameters come from the `{name}`s in the path, answers from the operation's statuses and media types, errors
from its dialect's status table (each error status with the exceptions that answer it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from http import HTTPStatus
from types import MappingProxyType
from typing import Any

import msgspec

from peakgate import __version__
from peakgate.api.endpoint import Operation
from peakgate.api.errors import Dialect
from peakgate.errors import PeakgateError, QuotaExceeded, RateLimited, Unauthorized

_REF = "#/components/schemas/{name}"
_JSON = "application/json"
_SSE = "text/event-stream"
_QUERY_METHODS = frozenset({"GET", "DELETE"})  # their fields travel in the query string, never a body
_PATH_PARAMETER = re.compile(r"{(\w+)}")
# Only a caller with a key meets these: operations without auth never answer them.
_KEYED_ERRORS: tuple[type[PeakgateError], ...] = (Unauthorized, QuotaExceeded, RateLimited)
_RETRY_LATER = frozenset({429, 503})
_RETRY_AFTER: Mapping[str, Any] = MappingProxyType({"Retry-After": {
    "description": "whole seconds to wait before retrying", "required": True,
    "schema": {"type": "string", "pattern": "^[0-9]+$"},
}})
_LOCATION: Mapping[str, Any] = MappingProxyType({"Location": {
    "description": "the job's status URL", "required": True, "schema": {"type": "string"},
}})
_SECURITY_SCHEMES: Mapping[str, dict[str, str]] = MappingProxyType({
    "bearer": {"type": "http", "scheme": "bearer"},
    "apiKeyHeader": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
    "deeplAuthKey": {"type": "apiKey", "in": "header", "name": "Authorization",
                     "description": "`DeepL-Auth-Key KEY` (or the `auth_key` field)"},
    "libreApiKey": {"type": "apiKey", "in": "query", "name": "api_key",
                    "description": "the `api_key` field, in the query, a form or JSON"},
})
_SECURITY_BY_DIALECT: Mapping[str, tuple[str, ...]] = MappingProxyType({
    "native": ("bearer", "apiKeyHeader"), "deepl": ("deeplAuthKey",), "libre": ("libreApiKey",),
})

Json = dict[str, Any]


def openapi_document(operations: Sequence[Operation]) -> Json:
    types = _schema_types(operations)
    schemas, components = msgspec.json.schema_components(types, ref_template=_REF)
    schema_of = dict(zip(types, schemas, strict=True))
    paths: dict[str, Json] = {}
    for op in operations:
        for method in op.methods:
            paths.setdefault(op.path, {})[method.lower()] = _operation(op, method, schema_of)
    return {
        "openapi": "3.1.0",
        "info": {"title": "peakgate", "version": __version__,
                 "description": "Translation serving: native API plus DeepL- and LibreTranslate-compatible ones."},
        "paths": paths,
        "components": {"schemas": components, "securitySchemes": dict(_SECURITY_SCHEMES)},
    }


def _schema_types(operations: Sequence[Operation]) -> list[Any]:
    found: list[Any] = []
    for op in operations:
        for type_ in (op.request, op.response, op.accepted, op.dialect.schema):
            if type_ is not None and type_ not in found:
                found.append(type_)
    return found


def _operation(op: Operation, method: str, schema_of: Mapping[Any, Json]) -> Json:
    doc: Json = {
        "summary": op.summary,
        "operationId": re.sub(r"\W+", "_", f"{method}_{op.dialect.name}_{op.path}".lower()).strip("_"),
        "responses": _answers(op, schema_of) | _errors(op, schema_of[op.dialect.schema]),
    }
    if op.auth:
        doc["security"] = [{name: []} for name in _SECURITY_BY_DIALECT[op.dialect.name]]
    parameters = [_parameter(name, "path", required=True) for name in _PATH_PARAMETER.findall(op.path)]
    if op.request is not None and method in _QUERY_METHODS:
        parameters += [_parameter(field.encode_name, "query", required=field.required)
                       for field in msgspec.structs.fields(op.request)]
    elif op.request is not None:
        schema = schema_of[op.request]
        required = any(field.required for field in msgspec.structs.fields(op.request))
        doc["requestBody"] = {"required": required, "content": {m: {"schema": schema} for m in op.consumes}}
    if parameters:
        doc["parameters"] = parameters
    return doc


def _parameter(name: str, where: str, *, required: bool) -> Json:
    # A path parameter is one segment: Starlette's `{name}` matches no "/".
    schema = {"type": "string", "pattern": "^[^/]+$"} if where == "path" else {"type": "string"}
    return {"name": name, "in": where, "required": required, "schema": schema}


def _answers(op: Operation, schema_of: Mapping[Any, Json]) -> Json:
    body = {media_type: {"schema": _body_schema(media_type, op, schema_of)} for media_type in op.produces}
    answers: Json = {}
    for status in op.statuses:
        answer: Json = {"description": HTTPStatus(status).phrase}
        if body and status != HTTPStatus.NOT_MODIFIED:  # a 304 never has a body
            answer["content"] = body
        if status in _RETRY_LATER:
            answer["headers"] = dict(_RETRY_AFTER)
        answers[str(status)] = answer
    if op.accepted is not None:
        answers["202"] = {"description": "Accepted: an async job, to poll at its status URL",
                          "content": {_JSON: {"schema": schema_of[op.accepted]}}, "headers": dict(_LOCATION)}
    return answers


def _body_schema(media_type: str, op: Operation, schema_of: Mapping[Any, Json]) -> Json:
    typed = schema_of[op.response] if op.response is not None else {}
    if media_type == _JSON:
        return typed
    if media_type == _SSE:
        # Each event's `data` is one JSON value of the response type; the closing `done` event's is `{}`.
        data = {"anyOf": [typed, {"type": "object", "maxProperties": 0}]}
        return {"type": "object", "required": ["event", "data"], "properties": {
            "event": {"type": "string"},
            "data": {"type": "string", "contentMediaType": _JSON, "contentSchema": data},
        }}
    if media_type.startswith("text/"):
        return {"type": "string"}
    return {"type": "string", "contentMediaType": media_type.partition(";")[0]}


def _errors(op: Operation, schema: Json) -> Json:
    return {str(status): _error(op.dialect, status, causes, schema)
            for status, causes in sorted(_error_causes(op).items()) if status not in op.statuses}


def _error_causes(op: Operation) -> dict[int, list[str]]:
    causes: dict[int, list[str]] = {}
    for error, status in op.dialect.statuses.items():
        if op.auth or not issubclass(error, _KEYED_ERRORS):
            causes.setdefault(status, []).append(error.__name__)
    return causes


def _error(dialect: Dialect, status: int, causes: list[str], schema: Json) -> Json:
    error: Json = {"description": f"{', '.join(sorted(causes))} ({dialect.name} error shape)",
                   "content": {_JSON: {"schema": schema}}}
    if status in _RETRY_LATER:
        error["headers"] = dict(_RETRY_AFTER)
    return error
