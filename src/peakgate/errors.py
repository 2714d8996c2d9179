"""One rooted exception tree; adapters map third-party errors into it with `raise ... from exc`."""

from __future__ import annotations


class PeakgateError(Exception):
    """Root of every error peakgate raises on purpose.

    `retry_after_s` tells a client when a retry may succeed; a class whose errors always mean "later" sets a
    `default_retry_after_s`, so no raise site can forget the hint (a 429/503 without `Retry-After` makes
    clients guess, and guessing clients retry at once, in step).
    """

    code = "internal_error"
    default_retry_after_s: float | None = None

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s if retry_after_s is not None else self.default_retry_after_s


class ConfigError(PeakgateError):
    code = "config_error"


class BadRequest(PeakgateError):
    """The caller sent something we cannot serve; never retried."""

    code = "bad_request"


class UnknownModel(BadRequest):
    code = "unknown_model"


class UnsupportedPair(BadRequest):
    code = "unsupported_language_pair"


class UnsupportedSource(UnsupportedPair):
    """The detected source language is one nothing serves (into the requested target)."""

    code = "unsupported_source_language"


class InputTooLarge(BadRequest):
    code = "input_too_large"


class Unauthorized(PeakgateError):
    code = "unauthorized"


class QuotaExceeded(PeakgateError):
    code = "quota_exceeded"
    # Quotas reset with the billing period, which has no fixed end in-process: retrying sooner will not help.
    default_retry_after_s = 3600.0


class NotFound(PeakgateError):
    code = "not_found"


class Rejected(PeakgateError):
    """Admission or scheduling refused work to protect the service; retry later."""

    code = "rejected"
    default_retry_after_s = 1.0


class RateLimited(Rejected):
    code = "rate_limited"


class Overloaded(Rejected):
    code = "overloaded"


class DeadlineExceeded(Rejected):
    code = "deadline_exceeded"


class BackendError(PeakgateError):
    """An engine failed to translate."""

    code = "backend_error"


class EngineCrashed(BackendError):
    code = "engine_crashed"


class EngineTimeout(BackendError):
    code = "engine_timeout"


class Unavailable(BackendError):
    code = "unavailable"
    default_retry_after_s = 1.0
