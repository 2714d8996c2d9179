"""Durable jobs over HTTP: DeepL's document API (/v2/document…) and a native batch job API (/v1/jobs…).

DeepL flow, as the official SDKs drive it: upload (multipart) → poll status with the `document_key` → download
once 'done'. The download answers 503 while the job is still queued or translating (the SDK's
`DocumentNotReadyException`). `document_id` is 32 and `document_key` 64 upper-case hex digits, as DeepL's. An
unknown id, or one owned by another tenant, is 404; a wrong `document_key` for a visible id is 403. The upload's
fields are checked as DeepL checks them (`api.document_checks`); a `glossary_id` (v2 or v3) applies to every
segment; `output_format` must name the input's own format (no conversions). Downloading does not delete the
result: it can be fetched again until the job store is pruned.

Both kinds of job are checked at submission as a synchronous request is (`check_job`: every segment, the language
pair, the caller's quota) and billed when accepted; a document also gets the `JobsConfig` caps on its bytes and
segments (413). Input that could only fail later is refused before it is queued.

A batch job may be `deferrable`, with a `latest_finish` (RFC 3339 with an offset, or Unix seconds, in the
future): it then waits for off-peak hours, or for its latest start (see `jobs.runner`).
"""

from __future__ import annotations

import asyncio
import hmac
import math
from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import BodyParser, json_response, source_or_detect
from peakgate.api.contract import Language
from peakgate.api.deepl import served_codes
from peakgate.api.document_checks import check_document_fields, document_codec
from peakgate.api.endpoint import FORM_BODIES, UPLOAD, FilePart, Operation
from peakgate.api.errors import DEEPL, NATIVE
from peakgate.api.uploads import Upload, upload_form
from peakgate.domain import Principal
from peakgate.errors import BadRequest, InputTooLarge, NotFound, Rejected, Unauthorized
from peakgate.glossary.store import GlossaryStore
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.formats import DocumentCodec, codec_named
from peakgate.jobs.model import MEDIA_KINDS, Job, NewJob
from peakgate.jobs.offload import AsyncJobStore
from peakgate.observe.metrics import Metrics
from peakgate.scaleout.wall import SystemWallClock, WallClock

_ENVELOPE_BYTES = 64 * 1024  # form fields and boundaries around the file
_KEY_BODY_BYTES = 64 * 1024


class JobProgress(Protocol):
    @property
    def store(self) -> AsyncJobStore:
        """The job store behind a worker thread: its calls block, and a big document's would stall the loop."""
        ...

    async def submit(self, job: NewJob) -> Job:
        """Store a job and wake the workers."""
        ...

    def seconds_remaining(self, job: Job) -> int | None: ...

    def wake(self) -> None:
        """Look for queued jobs now (a media job queues itself once its file is recognised)."""
        ...


class DocumentService(Protocol):
    """What these routes need; `Service` grows these members when the lead wires jobs in."""

    @property
    def metrics(self) -> Metrics: ...

    @property
    def job_runner(self) -> JobProgress: ...

    @property
    def jobs_config(self) -> JobsConfig: ...

    @property
    def glossaries(self) -> GlossaryStore: ...

    def authenticate(self, key: str | None) -> Principal: ...

    def languages(self) -> list[Language]: ...

    async def check_job(self, segments: Sequence[str], source: str | None, target: str, principal: Principal
                        ) -> int:
        """Validate a job at submission as the synchronous endpoints validate a request, and check the
        caller's quota for it; returns the characters to bill."""
        ...

    async def bill_job(self, principal: Principal, characters: int) -> None: ...


class DocumentNotReady(Rejected):
    code = "document_not_ready"


class WrongDocumentKey(Unauthorized):
    code = "wrong_document_key"


class DocumentUpload(msgspec.Struct, kw_only=True):
    """The multipart fields of POST /v2/document (for the OpenAPI document; parsed by hand)."""

    file: FilePart
    target_lang: str
    source_lang: str | None = None
    filename: str | None = None
    formality: str | None = None
    glossary_id: str | None = None
    output_format: str | None = None
    auth_key: str | None = None


class DocumentKeyBody(msgspec.Struct, kw_only=True):
    document_key: str | None = None
    auth_key: str | None = None


class DocumentHandleOut(msgspec.Struct):
    document_id: str
    document_key: str


class DocumentStatusOut(msgspec.Struct, omit_defaults=True):
    document_id: str
    status: str
    seconds_remaining: int | None = None
    billed_characters: int | None = None
    error_message: str | None = None


class BatchBody(msgspec.Struct, kw_only=True):
    segments: list[str]
    target: str
    source: str | None = None  # None or "auto": detect
    deferrable: bool = False  # may wait for off-peak hours...
    latest_finish: str | float | None = None  # ...finishing by then: RFC 3339 with an offset, or Unix seconds


class BatchCreated(msgspec.Struct):
    job_id: str
    status: str


class BatchStatusOut(msgspec.Struct, omit_defaults=True):
    job_id: str
    status: str
    segments_total: int
    segments_done: int
    billed_characters: int
    seconds_remaining: int | None = None
    error_message: str | None = None
    translations: list[str] | None = None  # only once 'done'
    deferrable: bool = False


def _document_job(upload: Upload, tenant: str, service: DocumentService) -> NewJob:
    config = service.jobs_config
    params = check_document_fields(upload.fields, served_codes(service.languages()), tenant, service.glossaries)
    size = len(upload.data)
    if size > config.max_document_bytes:  # the body cap also leaves room for the form around the file
        raise InputTooLarge(f"document of {size} bytes is over the {config.max_document_bytes}-byte limit")
    filename = upload.fields.get("filename") or upload.name
    codec = document_codec(filename, upload.content_type)
    wanted = upload.fields.get("output_format")
    if wanted and codec_named(wanted).name != codec.name:
        raise BadRequest(f"cannot convert {codec.name} to {wanted}: output_format must match the input format")
    segments = tuple(codec.extract(upload.data))
    if len(segments) > config.max_document_segments:
        raise InputTooLarge(f"document has {len(segments)} segments; the limit is {config.max_document_segments}")
    return NewJob(tenant=tenant, kind="document", source=params.source, target=params.target, segments=segments,
                  filename=filename, format=codec.name, input_data=upload.data, glossary_id=params.glossary_id)


async def _submit(service: DocumentService, job: NewJob, principal: Principal) -> Job:
    """Checked and charged as a synchronous request would be, so a queued job does not fail late for its input."""
    characters = await service.check_job(job.segments, job.source, job.target, principal)
    created = await service.job_runner.submit(job)
    await service.bill_job(principal, characters)
    return created


async def _owned(service: DocumentService, job_id: str, principal: Principal) -> Job:
    job = await service.job_runner.store.get(job_id)
    # Another tenant's job is as good as absent, and so is an image or speech job (its own routes answer it).
    if job is None or job.tenant != principal.tenant or job.kind in MEDIA_KINDS:
        raise NotFound(f"document {job_id} not found")
    return job


def _check_key(job: Job, given: str | None) -> None:
    if given is None:
        raise BadRequest("missing required field `document_key`")
    if not hmac.compare_digest(given.encode(), job.key.encode()):
        raise WrongDocumentKey("wrong document_key for this document")


def _status_out(service: DocumentService, job: Job) -> DocumentStatusOut:
    out = DocumentStatusOut(job.id, job.status)
    if job.status in ("queued", "translating"):
        out.seconds_remaining = service.job_runner.seconds_remaining(job)
    elif job.status == "done":
        out.billed_characters = job.billed_characters
    else:
        out.error_message = job.error_message or "document translation failed"
    return out


async def _download(service: DocumentService, job: Job) -> Response:
    if job.status == "error":
        raise BadRequest(f"document translation failed: {job.error_message or 'unknown error'}")
    output = await service.job_runner.store.output(job.id) if job.status == "done" else None
    if output is None:
        eta = service.job_runner.seconds_remaining(job)
        raise DocumentNotReady("Document not ready", retry_after_s=float(eta) if eta is not None else 5.0)
    codec: DocumentCodec = codec_named(job.format or "txt")
    stem = (job.filename or "document").rsplit(".", 1)[0]
    disposition = f'attachment; filename="{stem}.{codec.name}"'.encode("latin-1", "replace").decode("latin-1")
    return Response(output, media_type=codec.content_type, headers={"Content-Disposition": disposition})


async def _batch_out(service: DocumentService, job: Job) -> BatchStatusOut:
    out = BatchStatusOut(job.id, job.status, job.segments_total, job.segments_done, job.billed_characters,
                         deferrable=job.deferrable)
    if job.status == "done":
        out.translations = [t or "" for t in await service.job_runner.store.translations(job.id)]
    elif job.status == "error":
        out.error_message = job.error_message
    else:
        out.seconds_remaining = service.job_runner.seconds_remaining(job)
    return out


def _batch_job(body: BatchBody, tenant: str, limit: int, now_s: float) -> NewJob:
    if not body.segments:
        raise BadRequest("no segments to translate: send at least one")
    if len(body.segments) > limit:
        raise BadRequest(f"too many segments: {len(body.segments)} > {limit} per batch job")
    return NewJob(tenant=tenant, kind="batch", source=source_or_detect(body.source),
                  target=body.target.strip().lower(), segments=tuple(body.segments), deferrable=body.deferrable,
                  latest_finish=_latest_finish(body, now_s))


def _latest_finish(body: BatchBody, now_s: float) -> float | None:
    """`latest_finish` as Unix seconds: required by a deferrable job, refused on any other, in the future."""
    if body.latest_finish is None:
        if body.deferrable:
            raise BadRequest("a deferrable job needs `latest_finish`: when it must be done by, as RFC 3339 "
                             "(2026-12-06T05:00:00Z) or Unix seconds")
        return None
    if not body.deferrable:
        raise BadRequest("`latest_finish` is for deferrable jobs: send `deferrable: true` with it")
    at = _unix_s(body.latest_finish)
    if at <= now_s:
        raise BadRequest(f"`latest_finish` must be in the future; {body.latest_finish!r} has passed")
    return at


def _unix_s(value: str | float) -> float:
    if not isinstance(value, str):
        if not math.isfinite(value):
            raise BadRequest("`latest_finish` must be a finite number of Unix seconds")
        return float(value)
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError as exc:
        raise BadRequest(f"`latest_finish` {value!r} is neither RFC 3339 nor Unix seconds") from exc
    if parsed.tzinfo is None:
        raise BadRequest(f"`latest_finish` {value!r} has no UTC offset: add one (Z or +08:00)")
    return parsed.timestamp()


def document_operations(service: DocumentService, wall: WallClock | None = None) -> list[Operation]:
    config = service.jobs_config
    clock = wall or SystemWallClock()
    key_parser = BodyParser(DocumentKeyBody, _KEY_BODY_BYTES)
    batch_parser = BodyParser(BatchBody, config.max_batch_body_bytes)

    async def upload(request: Request) -> Response:
        header = header_key(request, "DeepL-Auth-Key")
        # A header key is checked before the (large) body is read; a legacy `auth_key` field only after.
        principal = service.authenticate(header) if header else None
        upload = await upload_form(request, config.max_document_bytes + _ENVELOPE_BYTES, "document")
        principal = principal or service.authenticate(upload.fields.get("auth_key"))
        # Splitting a 20 MB document takes seconds: off the loop, like every other step of a big job.
        new_job = await asyncio.to_thread(_document_job, upload, principal.tenant, service)
        job = await _submit(service, new_job, principal)
        return json_response(DocumentHandleOut(job.id, job.key))

    async def keyed_job(request: Request) -> Job:
        body = await key_parser.parse(request)
        principal = service.authenticate(header_key(request, "DeepL-Auth-Key") or body.auth_key)
        job = await _owned(service, str(request.path_params["document_id"]), principal)
        _check_key(job, body.document_key)
        return job

    async def status(request: Request) -> Response:
        return json_response(_status_out(service, await keyed_job(request)))

    async def result(request: Request) -> Response:
        return await _download(service, await keyed_job(request))

    async def create_batch(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        body = await batch_parser.parse(request)
        new_job = _batch_job(body, principal.tenant, config.max_batch_segments, clock.now())
        job = await _submit(service, new_job, principal)
        return json_response(BatchCreated(job.id, job.status), status_code=202)

    async def batch_status(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        job = await _owned(service, str(request.path_params["job_id"]), principal)
        return json_response(await _batch_out(service, job))

    downloads = tuple(codec_named(name).content_type for name in ("txt", "html", "docx"))
    return [
        Operation("/v2/document", ("POST",), upload, DEEPL, "DeepL-compatible document upload", DocumentUpload,
                  DocumentHandleOut, consumes=UPLOAD, auth=True),
        Operation("/v2/document/{document_id}", ("POST",), status, DEEPL, "DeepL-compatible document status",
                  DocumentKeyBody, DocumentStatusOut, consumes=FORM_BODIES, auth=True),
        Operation("/v2/document/{document_id}/result", ("POST",), result, DEEPL,
                  "DeepL-compatible document download (503 until done)", DocumentKeyBody, consumes=FORM_BODIES,
                  produces=downloads, auth=True),
        Operation("/v1/jobs", ("POST",), create_batch, NATIVE, "Queue a batch translation job", BatchBody,
                  BatchCreated, statuses=(202,), auth=True),
        Operation("/v1/jobs/{job_id}", ("GET",), batch_status, NATIVE, "Batch job status, with results once done",
                  response=BatchStatusOut, auth=True),
    ]
