"""Speech translation: `POST /v1/speech` (a WAV, FLAC or OGG file) and the `/v1/speech/stream` WebSocket.

The upload is checked from its header before any engine sees it (`media.audio.inspect`), then recognised and
decoded in the media pool's ASR lane, then translated one utterance per segment through `service.translate`.
A clip over `media.audio_sync_max_s` (up to `audio_max_s`), or any with `async=true`, becomes an async job
(`media.jobs`): 202 with `status_url`; `GET /v1/speech/jobs/{job_id}` answers its status and, once done, this
endpoint's JSON as `result`.

The stream: a JSON start message (`{"type": "start", "target": "es", "sample_rate": 16000}`, within
`media.stream_start_timeout_s` of connecting), binary PCM16 mono chunks, then `{"type": "end"}`. The server
answers `partial` messages as the transcript changes and one `final`, then closes with 1000. Close codes: 4401
bad key, 1008 a bad message, a refused language or no start message in time, 1009 over a size or duration cap,
1013 the media pool is shedding (or the degradation ladder has turned streaming off).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import TypeVar

import msgspec
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from peakgate.api.auth import header_key
from peakgate.api.bodies import json_response
from peakgate.api.contract import TranslationService
from peakgate.api.endpoint import NO_TIER, UPLOAD, Operation, set_served
from peakgate.api.errors import NATIVE, status_for
from peakgate.api.stream import WS_POLICY_CLOSE, ws_key
from peakgate.api.uploads import MediaUpload, upload_form
from peakgate.clock import Clock, MonotonicClock
from peakgate.config import PriorityClass
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.errors import BadRequest, InputTooLarge, PeakgateError, Rejected, Unauthorized
from peakgate.jobs.model import NewJob
from peakgate.media.asr import MODEL, Transcript, word_error_rate
from peakgate.media.asr import transcribe_file as recognise_file
from peakgate.media.audio import AudioLimits, inspect
from peakgate.media.jobs import (
    JobCreated,
    JobState,
    MediaService,
    accepted,
    answer_mode,
    finished_layout,
    owned,
    state,
    submit,
)
from peakgate.media.pool import MediaPool
from peakgate.media.settings import MediaConfig
from peakgate.media.speech import SegmentOut, Translator, check_languages, translate_utterances
from peakgate.media.speech_stream import Runner, SpeechStream, StreamLimits, StreamStart

_ENVELOPE_BYTES = 64 * 1024  # form fields and boundaries around the file
_CONTROL_BYTES = 4096  # a start or end message
STREAM_PATH = "/v1/speech/stream"
_JOBS = "/v1/speech/jobs"
WS_NORMAL, WS_POLICY, WS_TOO_BIG, WS_TRY_LATER = 1000, 1008, 1009, 1013
T = TypeVar("T")


class SpeechUpload(MediaUpload, kw_only=True):
    """The multipart fields of POST /v1/speech; `source`: en (the default) is the only language recognised so
    far."""

    reference: str | None = None  # what was said, if known: the answer then carries the word error rate


class SpeechOut(msgspec.Struct, omit_defaults=True):
    transcript: str
    translation: str
    segments: list[SegmentOut]
    duration_s: float
    model: str  # the recogniser
    billed_characters: int
    translation_model: str | None = None  # synchronous answers: a job's chunks may each be served by another
    tier: str | None = None
    wer: float | None = None


class SpeechJobOut(JobState, kw_only=True, omit_defaults=True):
    result: SpeechOut | None = None  # once done: what POST /v1/speech answers


class SpeechLayout(msgspec.Struct):
    """What ASR heard, kept with a speech job until its translations are in."""

    transcript: Transcript
    wer: float | None


def _translator(service: TranslationService, principal: Principal, source: str, target: str, *,
                priority: PriorityClass | None, tier: str | None = None, glossary_id: str | None = None
                ) -> Translator:
    async def translate(segments: tuple[str, ...]) -> TranslateResult:
        return await service.translate(TranslateRequest(segments, source, target, tier=tier, priority=priority,
                                                         glossary_id=glossary_id), principal)

    return translate


async def _read_upload(request: Request, max_bytes: int) -> tuple[SpeechUpload, bytes]:
    upload = await upload_form(request, max_bytes, "audio")
    try:
        return msgspec.convert({**upload.fields, "file": ""}, SpeechUpload, strict=False), upload.data
    except msgspec.ValidationError as exc:
        raise BadRequest(f"invalid request: {exc}") from exc


def _wer(form: SpeechUpload, transcript: Transcript) -> float | None:
    return None if form.reference is None else round(word_error_rate(form.reference, transcript.text), 3)


def speech_operations(service: MediaService, pool: MediaPool) -> list[Operation]:
    config = service.settings.media
    limits = AudioLimits(config.audio_max_bytes, config.audio_max_s)

    async def speech(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        form, data = await _read_upload(request, config.audio_max_bytes + _ENVELOPE_BYTES)
        source, target = check_languages(form.source, form.target, service.languages())
        info = await asyncio.to_thread(inspect, data, limits)  # an OGG's length takes a scan to its end
        mode = answer_mode(info.duration_s, config.audio_sync_max_s, asked_async=form.async_,
                           jobs_enabled=service.settings.jobs.enabled)
        if mode == "refuse":
            raise InputTooLarge(f"audio of {info.duration_s:.1f} s is over the {config.audio_sync_max_s:g} s "
                                f"answered here, and async jobs are off; stream longer audio over {STREAM_PATH}")
        if mode == "async":
            return await _accept(service, pool, form, data, info.duration_s, principal=principal, pair=(source, target))
        transcript = await pool.run("asr", info.duration_s, recognise_file, data, config.stream_max_utterance_s)
        # Document priority, as for images: the client has already waited seconds for ASR, and a long task's
        # text must queue behind interactive text, not beside it.
        translate = _translator(service, principal, source, target, priority="document", tier=form.tier,
                                glossary_id=form.glossary_id)
        segments, result = await translate_utterances(translate, transcript.utterances)
        set_served(request, result)
        first = result.translations[0]
        return json_response(SpeechOut(
            transcript.text, " ".join(s.translation for s in segments), segments, round(transcript.duration_s, 2),
            MODEL, result.billed_characters, first.model, first.tier, _wer(form, transcript)))

    async def speech_job(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        job = await owned(service, str(request.path_params["job_id"]), principal, "speech")
        out = SpeechJobOut(**msgspec.structs.asdict(state(service, job)))
        if job.status == "done":
            layout, translations = await finished_layout(service, job)
            out.result = _job_result(msgspec.json.decode(layout, type=SpeechLayout), translations,
                                     job.billed_characters)
        return json_response(out)

    return [
        Operation("/v1/speech", ("POST",), speech, NATIVE,
                  "Transcribe English speech (WAV, FLAC or OGG) and translate it, segment by utterance; a long "
                  "clip answers 202 with an async job", SpeechUpload, SpeechOut, consumes=UPLOAD, auth=True,
                  accepted=JobCreated),
        Operation(f"{_JOBS}/{{job_id}}", ("GET",), speech_job, NATIVE, "An async speech job's status and result",
                  response=SpeechJobOut, auth=True),
    ]


async def _accept(service: MediaService, pool: MediaPool, form: SpeechUpload, data: bytes, duration_s: float, *,
                  principal: Principal, pair: tuple[str, str]) -> Response:
    config = service.settings.media

    async def recognised() -> tuple[tuple[str, ...], bytes]:
        transcript = await pool.run("asr", duration_s, recognise_file, data, config.stream_max_utterance_s,
                                    wait=True)
        layout = SpeechLayout(transcript, _wer(form, transcript))
        return tuple(u.text for u in transcript.utterances), msgspec.json.encode(layout)

    job = NewJob(tenant=principal.tenant, kind="speech", source=pair[0], target=pair[1], segments=(),
                 input_data=data, glossary_id=form.glossary_id)
    created = await submit(service, pool, job, principal, recognised, max_recognising=config.max_recognising_jobs)
    return accepted(created, _JOBS)


def _job_result(layout: SpeechLayout, translations: list[str], billed_characters: int) -> SpeechOut:
    utterances = layout.transcript.utterances
    segments = [SegmentOut(round(u.start_s, 2), round(u.end_s, 2), u.text, t)
                for u, t in zip(utterances, translations, strict=True)]
    return SpeechOut(layout.transcript.text, " ".join(translations), segments,
                     round(layout.transcript.duration_s, 2), MODEL, billed_characters, wer=layout.wer)


def _stream_limits(config: MediaConfig) -> StreamLimits:
    return StreamLimits(config.stream_max_s, config.stream_max_chunk_bytes, config.stream_partial_every_s,
                        config.stream_max_utterance_s)


def _close_code(exc: PeakgateError) -> int:
    if isinstance(exc, InputTooLarge):
        return WS_TOO_BIG
    return WS_TRY_LATER if isinstance(exc, Rejected) else WS_POLICY


class NoStart(BadRequest):
    code = "no_start_message"


async def first_message(receive: Callable[[], Awaitable[T]], clock: Clock, timeout_s: float) -> T:
    """`receive()`'s answer, or `NoStart` once `timeout_s` passes on `clock` without one."""
    message = asyncio.ensure_future(receive())
    expired = False

    def expire() -> None:
        nonlocal expired
        expired = True
        message.cancel()

    # A timer callback, not a sleeping task: the deadline is set before this first awaits.
    timer = clock.call_at(clock.now() + timeout_s, expire)
    try:
        return await message
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if not expired or (task is not None and task.cancelling()):
            raise  # our caller was cancelled, not timed out
        raise NoStart(f"no start message within {timeout_s:g} s of connecting: send "
                      "{\"type\": \"start\", \"target\": ...} first") from None
    finally:
        timer.cancel()
        message.cancel()


async def _start(ws: WebSocket, service: TranslationService, principal: Principal, clock: Clock
                 ) -> tuple[StreamStart, Translator]:
    timeout_s = service.settings.media.stream_start_timeout_s
    message = (await first_message(ws.receive, clock, timeout_s)).get("text")
    if message is None or len(message) > _CONTROL_BYTES:
        raise BadRequest(f"the first message must be a JSON start message (text, under {_CONTROL_BYTES} bytes)")
    try:
        start = msgspec.json.decode(message, type=StreamStart)
    except msgspec.DecodeError as exc:
        raise BadRequest(f"invalid start message: {exc}; send {{\"type\": \"start\", \"target\": \"es\"}}") from exc
    if start.type != "start" or not 8000 <= start.sample_rate <= 48000:
        raise BadRequest("the first message must be {\"type\": \"start\", \"target\": ..., \"sample_rate\": "
                         "8000..48000}")
    source, target = check_languages(start.source, start.target, service.languages())
    # The principal's class: a live listener waits on each utterance (real-time speech wants an answer in
    # milliseconds); a flood of streams is shed by the pool's admission and the ladder, not by queueing its text.
    return start, _translator(service, principal, source, target, priority=None)


async def _serve_stream(ws: WebSocket, service: TranslationService, pool: Runner, principal: Principal,
                        clock: Clock) -> None:
    start, translate = await _start(ws, service, principal, clock)

    async def send(message: msgspec.Struct) -> None:
        await ws.send_text(msgspec.json.encode(message).decode())

    stream = SpeechStream(pool, translate, send, _stream_limits(service.settings.media), start.sample_rate)
    while (message := await ws.receive())["type"] != "websocket.disconnect":
        if message.get("bytes") is not None:
            await stream.feed(message["bytes"])
        elif message.get("text") and _is_end(message["text"]):
            await send(await stream.finish())
            await ws.close(WS_NORMAL)
            return
        else:
            raise BadRequest("send binary PCM16 chunks, then {\"type\": \"end\"}")


def _is_end(text: str) -> bool:
    with contextlib.suppress(msgspec.DecodeError):
        return len(text) <= _CONTROL_BYTES and msgspec.json.decode(text) == {"type": "end"}
    return False


def speech_routes(service: TranslationService, pool: Runner, clock: Clock | None = None) -> list[BaseRoute]:
    """The stream's route; `clock` times the start message (tests: a FakeClock)."""
    clock = clock or MonotonicClock()

    def record(status: int) -> None:
        # One request per stream, with the status POST /v1/speech would have answered (ok, refused, failed).
        service.metrics.requests.labels(endpoint=STREAM_PATH, tier=NO_TIER, status=str(status)).inc()

    async def websocket(ws: WebSocket) -> None:
        await ws.accept()  # accept first: only an accepted socket carries a close code and reason
        try:
            principal = service.authenticate(ws_key(ws))
        except Unauthorized as exc:
            record(status_for(NATIVE, exc))
            await ws.close(code=WS_POLICY_CLOSE, reason=exc.message)
            return
        if not pool.allows("stream"):
            record(503)
            await ws.close(WS_TRY_LATER, "streaming speech is paused while the server sheds load; "
                                         "retry later or POST /v1/speech")
            return
        try:
            await _serve_stream(ws, service, pool, principal, clock)
        except WebSocketDisconnect:
            return  # the client left: nothing to tell it
        except PeakgateError as exc:
            record(status_for(NATIVE, exc))
            await ws.send_text(msgspec.json.encode({"type": "error", "code": exc.code, "message": exc.message})
                               .decode())
            # A close reason is capped at 123 bytes of UTF-8.
            await ws.close(_close_code(exc), exc.message.encode()[:120].decode(errors="ignore"))
        else:
            record(200)

    return [WebSocketRoute(STREAM_PATH, websocket)]
