"""Exception → HTTP response, per dialect: one status table and one body shape each.

Statuses are looked up along the exception's MRO, so a new subclass inherits its parent's status until it is
given one of its own. Every error response is JSON that says what is wrong; `Retry-After` (whole seconds,
rounded up, at least 1) goes on any error that knows when to retry, and on every 429 and 503 whatever raised
it: a dialect may answer 503 for an error class that has no hint of its own (DeepL's BackendError).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

import msgspec
from starlette.responses import Response

from peakgate.errors import (
    BackendError,
    BadRequest,
    DeadlineExceeded,
    InputTooLarge,
    NotFound,
    Overloaded,
    PeakgateError,
    QuotaExceeded,
    RateLimited,
    Rejected,
    Unauthorized,
    Unavailable,
)

JSON = "application/json"


class NativeErrorDetail(msgspec.Struct):
    code: str
    message: str


class NativeError(msgspec.Struct):
    error: NativeErrorDetail


class DeeplError(msgspec.Struct):
    message: str


class LibreError(msgspec.Struct):
    error: str


@dataclass(frozen=True, slots=True)
class Dialect:
    name: str
    statuses: Mapping[type[PeakgateError], int]
    body: Callable[[str, str], msgspec.Struct]  # (code, message) -> the dialect's error object
    schema: type[msgspec.Struct]  # the error body's type, for the OpenAPI document


def _statuses(table: dict[type[PeakgateError], int]) -> Mapping[type[PeakgateError], int]:
    return MappingProxyType({PeakgateError: 500, **table})


# Native: quota spent is 402 (retrying will not help until the billing period resets), distinct from 429.
NATIVE = Dialect(
    "native",
    _statuses({
        BadRequest: 400, InputTooLarge: 413, Unauthorized: 401, QuotaExceeded: 402, NotFound: 404,
        Rejected: 503, RateLimited: 429, Overloaded: 503, DeadlineExceeded: 504,
        BackendError: 502, Unavailable: 503,
    }),
    lambda code, message: NativeError(NativeErrorDetail(code, message)),
    NativeError,
)

# DeepL: 403 bad key, 456 quota, no 504 (a missed deadline is "try again later": 503 + Retry-After).
DEEPL = Dialect(
    "deepl",
    _statuses({
        BadRequest: 400, InputTooLarge: 413, Unauthorized: 403, QuotaExceeded: 456, NotFound: 404,
        Rejected: 503, RateLimited: 429, BackendError: 503,
    }),
    lambda _code, message: DeeplError(message),
    DeeplError,
)

# LibreTranslate answers 400 for every invalid input (too long included) and 429 for any limit.
LIBRE = Dialect(
    "libre",
    _statuses({
        BadRequest: 400, Unauthorized: 403, QuotaExceeded: 429, NotFound: 404,
        Rejected: 503, RateLimited: 429, BackendError: 500, Unavailable: 503,
    }),
    lambda _code, message: LibreError(message),
    LibreError,
)


def status_for(dialect: Dialect, exc: PeakgateError) -> int:
    # PeakgateError is in every table, so the walk always ends on a hit.
    return next(dialect.statuses[cls] for cls in type(exc).__mro__ if cls in dialect.statuses)


def retry_after(seconds: float) -> str:
    return str(max(1, math.ceil(seconds)))


RETRY_LATER_STATUSES = frozenset({429, 503})
_DEFAULT_RETRY_AFTER_S = 1.0


def error_response(dialect: Dialect, exc: PeakgateError) -> Response:
    status = status_for(dialect, exc)
    hint = exc.retry_after_s
    if hint is None and status in RETRY_LATER_STATUSES:
        hint = _DEFAULT_RETRY_AFTER_S
    headers = {"Retry-After": retry_after(hint)} if hint is not None else None
    body = msgspec.json.encode(dialect.body(exc.code, exc.message))
    return Response(body, status_code=status, headers=headers, media_type=JSON)


def http_error_response(dialect: Dialect, status: int, message: str) -> Response:
    """For errors raised by routing itself (unknown path, wrong method), which have no PeakgateError."""
    code = "not_found" if status == 404 else "method_not_allowed" if status == 405 else "http_error"
    return Response(msgspec.json.encode(dialect.body(code, message)), status_code=status, media_type=JSON)
