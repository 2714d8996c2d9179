"""Async media jobs: an image or a clip too big to answer while the client waits becomes a job in the job store.

The handler checks the file as for a synchronous answer; `submit` then stores the job ('recognising', the file
as its input) and the handler answers 202 with a status URL. In the background (`MediaPool.spawn`, closed with
the app) OCR or ASR runs in the media pool's lane, waiting for room there rather than refusing
(`run(wait=True)`); the text found is checked and billed as a batch job is at submission (`check_job`,
`bill_job`) and stored with its layout (`JobStore.recognised`), which queues the job: the job runner then
translates it like any batch job, at batch priority behind interactive text, chunk by chunk, durably. The status
endpoint rebuilds the synchronous answer from the layout and the translations.

An accepted job is never dropped silently: any failure (a corrupt file, no speech, the quota, a crashed engine,
the app closing) leaves it 'error' with the reason, and a job a crashed process left 'recognising' is failed so
at the next start (`JobStore.recover`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Literal, Protocol

import msgspec
from starlette.responses import Response

from peakgate.api.bodies import json_response
from peakgate.api.contract import TranslationService
from peakgate.domain import Principal
from peakgate.errors import NotFound, Overloaded, PeakgateError, Rejected
from peakgate.jobs.model import Job, JobKind, NewJob
from peakgate.jobs.offload import AsyncJobStore
from peakgate.jobs.store import RECOGNITION_LOST, JobStoreError
from peakgate.media.pool import MediaPool

_log = logging.getLogger(__name__)

Mode = Literal["sync", "async", "refuse"]
# Runs the recognition (in the pool) and answers (the text found, one segment each; its layout, encoded).
Recognise = Callable[[], Awaitable[tuple[tuple[str, ...], bytes]]]


class JobNotReady(Rejected):
    code = "job_not_ready"


class JobQueue(Protocol):
    @property
    def store(self) -> AsyncJobStore: ...

    def seconds_remaining(self, job: Job) -> int | None: ...

    def wake(self) -> None:
        """Look for queued jobs now rather than at the next idle poll."""
        ...


class JobHost(Protocol):
    """What media jobs need of the service (`Service`; `api.documents.DocumentService` has the same members)."""

    @property
    def job_runner(self) -> JobQueue: ...

    async def check_job(self, segments: Sequence[str], source: str | None, target: str, principal: Principal
                        ) -> int: ...

    async def bill_job(self, principal: Principal, characters: int) -> None: ...


class MediaService(TranslationService, JobHost, Protocol):
    """What the image and speech endpoints need of the service."""


class JobState(msgspec.Struct, kw_only=True, omit_defaults=True):
    """A media job's status; the image and speech endpoints add their answer once 'done'."""

    job_id: str
    status: str  # recognising, queued (for translation), translating, done, error
    seconds_remaining: int | None = None
    billed_characters: int | None = None
    error_message: str | None = None


class JobCreated(msgspec.Struct):
    job_id: str
    status: str
    status_url: str


def accepted(job: Job, jobs_path: str) -> Response:
    """The 202 for a job taken: its id and status URL, also as `Location`."""
    url = f"{jobs_path}/{job.id}"
    response = json_response(JobCreated(job.id, job.status, url), status_code=202)
    response.headers["Location"] = url
    return response


def answer_mode(units: float, sync_max: float, *, asked_async: bool, jobs_enabled: bool) -> Mode:
    """Answer now (`units` within the synchronous cap, no job asked for), as a job, or refuse (413: too big to
    answer now, and jobs are off). The hard caps are checked before, with the file."""
    if not jobs_enabled:
        return "sync" if units <= sync_max else "refuse"
    return "async" if asked_async or units > sync_max else "sync"


async def submit(host: JobHost, pool: MediaPool, job: NewJob, principal: Principal, recognise: Recognise, *,
                 max_recognising: int) -> Job:
    """Store the job and start its recognition in the background; 503 when too many already wait for it."""
    if pool.background >= max_recognising:
        raise Overloaded(f"{pool.background} media jobs are already waiting for recognition; retry later",
                         retry_after_s=5.0)
    created = await host.job_runner.store.create(job)
    pool.spawn(_recognise_then_queue(host, created, principal, recognise), name=f"media-job-{created.id}")
    return created


async def _recognise_then_queue(host: JobHost, job: Job, principal: Principal, recognise: Recognise) -> None:
    store = host.job_runner.store
    try:
        segments, layout = await recognise()
        characters = await host.check_job(segments, job.source, job.target, principal) if segments else 0
        await store.recognised(job.id, segments, layout)
        host.job_runner.wake()
        await host.bill_job(principal, characters)
    except asyncio.CancelledError:
        await _fail(store, job.id, RECOGNITION_LOST)
        raise
    except PeakgateError as exc:
        _log.info("media job %s failed: %s", job.id, exc.message)
        await _fail(store, job.id, exc.message)
    except Exception:
        _log.exception("media job %s failed unexpectedly", job.id)
        await _fail(store, job.id, "internal error while recognising the file")


async def _fail(store: AsyncJobStore, job_id: str, message: str) -> None:
    try:
        await store.fail(job_id, message)
    except JobStoreError:
        _log.exception("media job %s: cannot record its failure (%s)", job_id, message)


async def owned(host: JobHost, job_id: str, principal: Principal, kind: JobKind) -> Job:
    """The caller's job of this kind; another tenant's, or another kind's, is as good as absent (404)."""
    job = await host.job_runner.store.get(job_id)
    if job is None or job.tenant != principal.tenant or job.kind != kind:
        raise NotFound(f"{kind} job {job_id} not found")
    return job


def state(host: JobHost, job: Job) -> JobState:
    out = JobState(job_id=job.id, status=job.status)
    if job.status == "done":
        out.billed_characters = job.billed_characters
    elif job.status == "error":
        out.error_message = job.error_message or "the job failed"
    else:
        out.seconds_remaining = host.job_runner.seconds_remaining(job)
    return out


async def finished_layout(host: JobHost, job: Job) -> tuple[bytes, list[str]]:
    """A done job's layout and its translations, in segment order."""
    store = host.job_runner.store
    layout = await store.layout(job.id)
    if layout is None:
        raise JobNotReady(f"job {job.id} has no result yet ({job.status})", retry_after_s=1.0)
    return layout, [t or "" for t in await store.translations(job.id)]
