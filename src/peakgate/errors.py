"""One rooted exception tree; adapters map third-party errors into it with `raise ... from exc`."""

from __future__ import annotations


class PeakgateError(Exception):
    """Root of every error peakgate raises on purpose."""

    code = "internal_error"

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retry_after_s = retry_after_s


class ConfigError(PeakgateError):
    code = "config_error"


class BadRequest(PeakgateError):
    """The caller sent something we cannot serve; never retried."""

    code = "bad_request"


class UnknownModel(BadRequest):
    code = "unknown_model"


class UnsupportedPair(BadRequest):
    code = "unsupported_language_pair"


class InputTooLarge(BadRequest):
    code = "input_too_large"


class Unauthorized(PeakgateError):
    code = "unauthorized"


class QuotaExceeded(PeakgateError):
    code = "quota_exceeded"


class NotFound(PeakgateError):
    code = "not_found"


class Rejected(PeakgateError):
    """Admission or scheduling refused work to protect the service; retry later."""

    code = "rejected"


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
