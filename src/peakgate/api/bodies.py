"""Cheap request parsing and response encoding with msgspec.

A request's fields come from a JSON body (decoded straight into a typed Struct), or from a form body
(urlencoded or multipart) merged over the query string (the official clients put fields in either place, the
DeepL SDK even in a GET body). Unknown fields are ignored, as DeepL and LibreTranslate do.
"""

from __future__ import annotations

from typing import Generic, TypeVar

import msgspec
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.types import Message

from peakgate.config import LimitsConfig
from peakgate.errors import BadRequest, InputTooLarge

T = TypeVar("T")

_FORMS = frozenset({"application/x-www-form-urlencoded", "multipart/form-data"})
_JSON_ESCAPE_BYTES = 6  # worst case per character: a \uXXXX escape
_ENVELOPE_BYTES = 64 * 1024  # field names, options, form boundaries


def max_body_bytes(limits: LimitsConfig) -> int:
    """A body bigger than this cannot hold a request the service would accept."""
    return limits.max_request_chars * _JSON_ESCAPE_BYTES + _ENVELOPE_BYTES


class BodyParser(Generic[T]):
    """Parses one request type; built once per route so the msgspec decoder is reused."""

    def __init__(self, type_: type[T], max_bytes: int) -> None:
        self._type = type_
        # strict=False: form and query values are strings, and compat clients send "1" for numbers and bools.
        self._json = msgspec.json.Decoder(type_, strict=False)
        self._max_bytes = max_bytes

    async def parse(self, request: Request) -> T:
        media_type = request.headers.get("content-type", "").partition(";")[0].strip().lower()
        body = await self._read(request)
        if body and _is_json(media_type, body):
            try:
                return self._json.decode(body)
            except msgspec.ValidationError as exc:  # a DecodeError subclass: must come first
                raise BadRequest(f"invalid request: {exc}") from exc
            except msgspec.DecodeError as exc:
                raise BadRequest(f"request body is not valid JSON: {exc}") from exc
        fields = _multi(request.query_params.multi_items())
        if body and media_type in _FORMS:
            fields |= await _form_fields(request, body)
        return self.convert(fields)

    def convert(self, fields: dict[str, str | list[str]]) -> T:
        try:
            return msgspec.convert(fields, self._type, strict=False)
        except msgspec.ValidationError as exc:
            raise BadRequest(f"invalid request: {exc}") from exc

    async def _read(self, request: Request) -> bytes:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self._max_bytes:
            raise InputTooLarge(f"request body of {declared} bytes is over the {self._max_bytes}-byte limit")
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self._max_bytes:
                raise InputTooLarge(f"request body is over the {self._max_bytes}-byte limit")
            chunks.append(chunk)
        return b"".join(chunks)


def _is_json(media_type: str, body: bytes) -> bool:
    # Some clients post JSON with no, a generic or a wrong content type (`curl -d '{…}'` says urlencoded);
    # a urlencoded form body never starts with "{", a multipart one always starts with its boundary.
    if media_type == "application/json" or media_type.endswith("+json"):
        return True
    return media_type != "multipart/form-data" and body.lstrip()[:1] == b"{"


def _multi(items: list[tuple[str, str]]) -> dict[str, str | list[str]]:
    """A repeated field (DeepL's `text=a&text=b`) becomes a list; a single one stays a string."""
    grouped: dict[str, list[str]] = {}
    for key, value in items:
        grouped.setdefault(key, []).append(value)
    return {key: values[0] if len(values) == 1 else values for key, values in grouped.items()}


async def _form_fields(request: Request, body: bytes) -> dict[str, str | list[str]]:
    # The body was read (under the size cap) already: replay it to Starlette's form parsers.
    async def replay() -> Message:
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        async with Request(request.scope, replay).form() as form:
            items = form.multi_items()
            if any(isinstance(value, UploadFile) for _, value in items):
                raise BadRequest("file uploads are not accepted here; send text fields")
            return _multi([(key, str(value)) for key, value in items])
    except HTTPException as exc:  # Starlette reports malformed multipart bodies this way
        raise BadRequest(f"malformed form body: {exc.detail}") from exc


def json_response(content: object, status_code: int = 200) -> Response:
    return Response(msgspec.json.encode(content), status_code=status_code, media_type="application/json")


def as_segments(text: str | list[str]) -> tuple[str, ...]:
    return (text,) if isinstance(text, str) else tuple(text)


def source_or_detect(source: str | None) -> str | None:
    """None asks the service to detect the source language; clients spell that "auto" or leave it out."""
    return None if source is None or source.strip().lower() in {"", "auto"} else source.strip().lower()
