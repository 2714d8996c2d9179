"""What travels through the queue: work entries (gateway → worker) and replies (worker → gateway), as msgpack.

Both carry a schema version `v`; a reader refuses any other version as malformed rather than guess. Fields are
encoded by name, so an entry that a reader cannot use still yields its `request_id` and `reply_to`
(`Envelope`) and the asking gateway hears at once why, instead of waiting for the deadline. Replies travel in
lists: one stream message carries everything a worker finished for one gateway in one flush.

An entry is one `WorkQueue.submit` call: the segments as given and whether to split them. The worker's own
scheduler splits, batches (with other gateways' entries), coalesces and reassembles, exactly as in-process.
Decoding travels as the class (each class's beam and length come from the shared config) plus the
degradation ladder's beam cap. The deadline is absolute Unix time (see `wall`).
"""

from __future__ import annotations

from collections import deque
from typing import TypeVar

import msgspec

from peakgate.config import PriorityClass
from peakgate.errors import BackendError, BadRequest, PeakgateError

SCHEMA_VERSION = 1
_T = TypeVar("_T")


class WorkEntry(msgspec.Struct, frozen=True, kw_only=True):
    v: int = SCHEMA_VERSION
    request_id: int
    gateway: str
    reply_to: str
    model: str
    source: str
    target: str
    priority: PriorityClass
    segments: list[str]
    split_sentences: bool = True
    beam_cap: int | None = None
    deadline_wall_s: float


class Envelope(msgspec.Struct, frozen=True):
    """The part of an entry needed to answer it."""

    request_id: int
    reply_to: str


class Reply(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    v: int = SCHEMA_VERSION
    request_id: int
    texts: list[str] | None = None  # one per segment, in order; None for a failure
    error_code: str | None = None
    error: str | None = None
    retry_after_s: float | None = None


_ENCODER = msgspec.msgpack.Encoder()
_ENTRY = msgspec.msgpack.Decoder(WorkEntry)
_ENVELOPE = msgspec.msgpack.Decoder(Envelope)
_REPLIES = msgspec.msgpack.Decoder(list[Reply])


def encode(message: WorkEntry | list[Reply]) -> bytes:
    """An entry, or the replies one worker sends one gateway at once (one stream message for all of them)."""
    return _ENCODER.encode(message)


def decode_entry(payload: bytes | None) -> WorkEntry:
    """Raises `BadRequest` for anything but a well-formed entry of this schema version."""
    entry = _decode(_ENTRY, payload, "work entry")
    if entry.v != SCHEMA_VERSION:
        raise BadRequest(f"work entry has schema v{entry.v}; this worker reads v{SCHEMA_VERSION}")
    return entry


def decode_envelope(payload: bytes | None) -> Envelope | None:
    try:
        return _decode(_ENVELOPE, payload, "work entry")
    except BadRequest:
        return None


def decode_replies(payload: bytes | None) -> list[Reply]:
    replies = _decode(_REPLIES, payload, "reply")
    if any(reply.v != SCHEMA_VERSION for reply in replies):
        raise BadRequest(f"reply of another schema version; this gateway reads v{SCHEMA_VERSION}")
    return replies


def _decode(decoder: msgspec.msgpack.Decoder[_T], payload: bytes | None, what: str) -> _T:
    if payload is None:
        raise BadRequest(f"{what} has no payload")
    try:
        return decoder.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadRequest(f"malformed {what}: {exc}") from exc


def success(request_id: int, texts: list[str]) -> Reply:
    return Reply(request_id=request_id, texts=texts)


def failure(request_id: int, error: PeakgateError) -> Reply:
    return Reply(request_id=request_id, error_code=error.code, error=error.message, retry_after_s=error.retry_after_s)


def outcome(reply: Reply, segments: int) -> list[str] | PeakgateError:
    """The texts a reply carries, or the error to raise in the caller (the worker's, rebuilt by its code)."""
    if reply.texts is not None:
        if len(reply.texts) != segments:
            return BackendError(f"a worker answered {len(reply.texts)} translations for {segments} segments")
        return reply.texts
    cls = error_class(reply.error_code or "")
    return cls(reply.error or "a worker failed without saying why", retry_after_s=reply.retry_after_s)


def error_class(code: str) -> type[PeakgateError]:
    """The class of `peakgate.errors` with `code`, the most general first (a subclass elsewhere may reuse its
    parent's code); an unknown code is a `BackendError`: the worker failed, the caller may fall back."""
    pending: deque[type[PeakgateError]] = deque([PeakgateError])
    while pending:
        cls = pending.popleft()
        if cls.code == code and cls.__module__ == PeakgateError.__module__:
            return cls
        pending.extend(cls.__subclasses__())
    return BackendError
