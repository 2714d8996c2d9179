"""Cheap request parsing and response encoding with msgspec.

A request's fields come from a JSON body (decoded straight into a typed Struct), or from a form body
(urlencoded or multipart) merged over the query string (the official clients put fields in either place, the
DeepL SDK even in a GET body). Unknown fields are ignored, as DeepL and LibreTranslate do.

Text must be UTF-8 wherever it arrives: Starlette would decode invalid bytes in a query string or a form as
latin-1 or U+FFFD (mojibake, translated with a 200), so query strings and urlencoded bodies are parsed here,
and multipart text fields are checked on their raw bytes. File parts stay bytes: their codec reads them.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Generic, TypeVar
from urllib.parse import unquote_to_bytes

import msgspec
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request
from starlette.responses import Response

from peakgate.config import LimitsConfig
from peakgate.errors import BadRequest, InputTooLarge

T = TypeVar("T")

MULTIPART = "multipart/form-data"
_URLENCODED = "application/x-www-form-urlencoded"
_JSON_ESCAPE_BYTES = 6  # worst case per character: a \uXXXX escape
_ENVELOPE_BYTES = 64 * 1024  # field names, options, form boundaries
_MAX_FORM_FIELDS = 1000  # per form or query string, as Starlette's own form parsers limit them


def max_body_bytes(limits: LimitsConfig) -> int:
    """A body bigger than this cannot hold a request the service would accept."""
    return limits.max_request_chars * _JSON_ESCAPE_BYTES + _ENVELOPE_BYTES


def decode_json(decoder: msgspec.json.Decoder[T], data: bytes | str, what: str) -> T:
    """`data` decoded, or a BadRequest saying what is wrong with `what` (a request body, a message)."""
    try:
        return decoder.decode(data)
    except msgspec.ValidationError as exc:  # a DecodeError subclass: must come first
        raise BadRequest(f"invalid request: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise BadRequest(f"{what} is not valid JSON: {exc}") from exc
    except RecursionError as exc:  # msgspec recurses once per `[` or `{`, within the interpreter's limit
        raise BadRequest(f"{what} is nested too deeply") from exc


def media_type_of(request: Request) -> str:
    return request.headers.get("content-type", "").partition(";")[0].strip().lower()


async def read_capped(request: Request, max_bytes: int) -> bytes:
    """The whole body, refused with InputTooLarge as soon as it is known to pass `max_bytes`."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise InputTooLarge(f"request body of {declared} bytes is over the {max_bytes}-byte limit")
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > max_bytes:
            raise InputTooLarge(f"request body is over the {max_bytes}-byte limit")
        chunks.append(chunk)
    return b"".join(chunks)


class BodyParser(Generic[T]):
    """Parses one request type; built once per route so the msgspec decoder is reused."""

    def __init__(self, type_: type[T], max_bytes: int) -> None:
        self._type = type_
        # strict=False: form and query values are strings, and compat clients send "1" for numbers and bools.
        self._json = msgspec.json.Decoder(type_, strict=False)
        self._max_bytes = max_bytes

    async def parse(self, request: Request) -> T:
        media_type = media_type_of(request)
        body = await read_capped(request, self._max_bytes)
        if body and _is_json(media_type, body):
            return decode_json(self._json, body, "request body")
        fields = _multi(urlencoded(request.scope["query_string"]))
        if body and media_type == MULTIPART:
            fields |= await _multipart_fields(request, body)
        elif body and media_type == _URLENCODED:
            fields |= _multi(urlencoded(body))
        return self.convert(fields)

    def convert(self, fields: dict[str, str | list[str]]) -> T:
        try:
            return msgspec.convert(fields, self._type, strict=False)
        except msgspec.ValidationError as exc:
            raise BadRequest(f"invalid request: {exc}") from exc


def _is_json(media_type: str, body: bytes) -> bool:
    # Some clients post JSON with no, a generic or a wrong content type (`curl -d '{…}'` says urlencoded);
    # a urlencoded form body never starts with "{", a multipart one always starts with its boundary.
    if media_type == "application/json" or media_type.endswith("+json"):
        return True
    return media_type != MULTIPART and body.lstrip()[:1] == b"{"


def _multi(items: list[tuple[str, str]]) -> dict[str, str | list[str]]:
    """A repeated field (DeepL's `text=a&text=b`) becomes a list; a single one stays a string."""
    grouped: dict[str, list[str]] = {}
    for key, value in items:
        grouped.setdefault(key, []).append(value)
    return {key: values[0] if len(values) == 1 else values for key, values in grouped.items()}


def _text(raw: bytes | bytearray, what: str, charset: str = "utf-8") -> str:
    try:
        return raw.decode(charset)
    except UnicodeDecodeError as exc:
        raise BadRequest(f"{what} is not valid UTF-8 text ({exc.reason} at byte {exc.start})") from exc


def urlencoded(raw: bytes) -> list[tuple[str, str]]:
    """`a=1&b=%C3%A9` (a query string or a form body) as (name, value) pairs, both UTF-8 text."""
    if raw.count(b"&") >= _MAX_FORM_FIELDS:  # counted before splitting: `&&&…` would cost a list item per byte
        raise BadRequest(f"too many form fields: the limit is {_MAX_FORM_FIELDS}")
    pairs: list[tuple[str, str]] = []
    for piece in raw.split(b"&"):
        if piece:  # `a&&b` has an empty piece; `a` alone is a blank value, as parse_qsl keeps them
            name, _, value = piece.replace(b"+", b" ").partition(b"=")
            key = _text(unquote_to_bytes(name), "a field name")
            pairs.append((key, _text(unquote_to_bytes(value), f"field `{key}`")))
    return pairs


class _TextFieldsParser(MultiPartParser):
    """Starlette's multipart parser, refusing a text field that is not valid in the body's charset (UTF-8
    unless the content type says otherwise) instead of decoding it as latin-1."""

    def on_part_end(self) -> None:
        part = self._current_part
        if part.file is None:
            _text(part.data, f"field `{part.field_name}`", self._charset)
        super().on_part_end()


@contextlib.asynccontextmanager
async def multipart_form(request: Request, body: bytes) -> AsyncIterator[FormData]:
    """The parts of a multipart body already read under its cap; uploaded files are closed on exit."""
    async def once() -> AsyncGenerator[bytes, None]:
        yield body

    try:
        form = await _TextFieldsParser(request.headers, once()).parse()
    except MultiPartException as exc:
        raise BadRequest(f"malformed multipart body: {exc.message}") from exc
    try:
        yield form
    finally:
        await form.close()


async def _multipart_fields(request: Request, body: bytes) -> dict[str, str | list[str]]:
    async with multipart_form(request, body) as form:
        fields: list[tuple[str, str]] = []
        for key, value in form.multi_items():
            if isinstance(value, UploadFile):
                raise BadRequest("file uploads are not accepted here; send text fields")
            fields.append((key, value))
        return _multi(fields)


def json_response(content: object, status_code: int = 200) -> Response:
    return Response(msgspec.json.encode(content), status_code=status_code, media_type="application/json")


def as_segments(text: str | list[str]) -> tuple[str, ...]:
    return (text,) if isinstance(text, str) else tuple(text)


def source_or_detect(source: str | None) -> str | None:
    """None asks the service to detect the source language; clients spell that "auto" or leave it out."""
    return None if source is None or source.strip().lower() in {"", "auto"} else source.strip().lower()
