"""The OpenAPI 3.1 document, generated from the operation table and the msgspec Structs the handlers use.

Built from the same `Operation`s the router serves, so the document cannot drift from the routes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import msgspec

from peakgate import __version__
from peakgate.api.endpoint import Operation

_REF = "#/components/schemas/{name}"
_FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")
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
        for type_ in (op.request, op.response, op.dialect.schema):
            if type_ is not None and type_ not in found:
                found.append(type_)
    return found


def _operation(op: Operation, method: str, schema_of: Mapping[Any, Json]) -> Json:
    doc: Json = {
        "summary": op.summary,
        "operationId": f"{method.lower()}_{op.dialect.name}{op.path.replace('/', '_')}",
        "responses": {"200": _ok(op, schema_of), "default": {
            "description": f"error ({op.dialect.name} shape); 429/503 carry Retry-After when known",
            "content": {"application/json": {"schema": schema_of[op.dialect.schema]}},
        }},
    }
    if op.auth:
        doc["security"] = [{name: []} for name in _SECURITY_BY_DIALECT[op.dialect.name]]
    if op.request is not None and method == "GET":
        doc["parameters"] = _query_parameters(op.request)
    elif op.request is not None:
        media_types = ("application/json", *_FORM_TYPES) if op.forms else ("application/json",)
        schema = schema_of[op.request]
        required = any(field.required for field in msgspec.structs.fields(op.request))
        doc["requestBody"] = {"required": required, "content": {m: {"schema": schema} for m in media_types}}
    return doc


def _ok(op: Operation, schema_of: Mapping[Any, Json]) -> Json:
    if op.response is None:
        return {"description": "OK", "content": {"text/plain": {"schema": {"type": "string"}}}}
    return {"description": "OK", "content": {"application/json": {"schema": schema_of[op.response]}}}


def _query_parameters(request: type[msgspec.Struct]) -> list[Json]:
    return [
        {"name": field.encode_name, "in": "query", "required": field.required, "schema": {"type": "string"}}
        for field in msgspec.structs.fields(request)
    ]
