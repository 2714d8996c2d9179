"""Speech translation: `POST /v1/speech` (a WAV, FLAC or OGG file) and the `/v1/speech/stream` WebSocket.

The upload is checked from its header before any engine sees it (`media.audio.inspect`), then recognised and
decoded in the media pool's ASR lane, then translated one utterance per segment through `service.translate`.
A clip over `media.audio_sync_max_s` is refused with 413 naming the streaming endpoint: the job store and its
workers carry text segments, and recognising audio inside a job would need a new kind of job worker.

The stream: a JSON start message (`{"type": "start", "target": "es", "sample_rate": 16000}`), binary PCM16
mono chunks, then `{"type": "end"}`. The server answers `partial` messages as the transcript changes and one
`final`, then closes with 1000. Close codes: 4401 bad key, 1008 a bad message or a refused language, 1009 over
a size or duration cap, 1013 the media pool is shedding (or the degradation ladder has turned streaming off).
"""

from __future__ import annotations

import asyncio
import contextlib

import msgspec
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, WebSocketRoute
from starlette.websockets import WebSocket, WebSocketDisconnect

from peakgate.api.auth import header_key
from peakgate.api.bodies import MULTIPART, json_response, media_type_of, multipart_form, read_capped
from peakgate.api.contract import TranslationService
from peakgate.api.endpoint import NO_TIER, UPLOAD, FilePart, Operation, set_served
from peakgate.api.errors import NATIVE, status_for
from peakgate.api.stream import WS_POLICY_CLOSE, _ws_key
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.errors import BadRequest, InputTooLarge, PeakgateError, Rejected, Unauthorized
from peakgate.media.asr import MODEL, word_error_rate
from peakgate.media.asr import transcribe_file as recognise_file
from peakgate.media.audio import AudioLimits, inspect
from peakgate.media.settings import MediaConfig
from peakgate.media.speech import SegmentOut, Translator, check_languages, translate_utterances
from peakgate.media.speech_stream import Runner, SpeechStream, StreamLimits, StreamStart

_ENVELOPE_BYTES = 64 * 1024  # form fields and boundaries around the file
_CONTROL_BYTES = 4096  # a start or end message
STREAM_PATH = "/v1/speech/stream"
WS_NORMAL, WS_POLICY, WS_TOO_BIG, WS_TRY_LATER = 1000, 1008, 1009, 1013


class SpeechUpload(msgspec.Struct, kw_only=True):
    """The multipart fields of POST /v1/speech (for the OpenAPI document; the file is read by hand)."""

    file: FilePart
    target: str
    source: str | None = None  # en (the default) is the only language recognised so far
    tier: str | None = None
    glossary_id: str | None = None
    reference: str | None = None  # what was said, if known: the answer then carries the word error rate


class SpeechOut(msgspec.Struct, omit_defaults=True):
    transcript: str
    translation: str
    segments: list[SegmentOut]
    duration_s: float
    model: str  # the recogniser
    translation_model: str
    tier: str
    billed_characters: int
    wer: float | None = None


def _translator(service: TranslationService, principal: Principal, source: str, target: str, *,
                tier: str | None = None, glossary_id: str | None = None) -> Translator:
    async def translate(segments: tuple[str, ...]) -> TranslateResult:
        return await service.translate(TranslateRequest(segments, source, target, tier=tier,
                                                         glossary_id=glossary_id), principal)

    return translate


async def _read_upload(request: Request, max_bytes: int) -> tuple[SpeechUpload, bytes]:
    if media_type_of(request) != MULTIPART:
        raise BadRequest("upload the audio as multipart/form-data with a `file` part and a `target` field")
    body = await read_capped(request, max_bytes)
    async with multipart_form(request, body) as form:
        fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise BadRequest("missing the `file` part: send the audio as a multipart file")
        data = await upload.read()
    try:
        return msgspec.convert({**fields, "file": ""}, SpeechUpload, strict=False), data
    except msgspec.ValidationError as exc:
        raise BadRequest(f"invalid request: {exc}") from exc


def speech_operations(service: TranslationService, pool: Runner) -> list[Operation]:
    config = service.settings.media
    limits = AudioLimits(config.audio_max_bytes, config.audio_max_s)

    async def speech(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        form, data = await _read_upload(request, config.audio_max_bytes + _ENVELOPE_BYTES)
        source, target = check_languages(form.source, form.target, service.languages())
        info = await asyncio.to_thread(inspect, data, limits)  # an OGG's length takes a scan to its end
        if info.duration_s > config.audio_sync_max_s:
            raise InputTooLarge(f"audio of {info.duration_s:.1f} s is over the {config.audio_sync_max_s:g} s "
                                f"answered here; stream longer audio over {STREAM_PATH}")
        transcript = await pool.run("asr", info.duration_s, recognise_file, data, config.stream_max_utterance_s)
        translate = _translator(service, principal, source, target, tier=form.tier, glossary_id=form.glossary_id)
        segments, result = await translate_utterances(translate, transcript.utterances)
        set_served(request, result)
        first = result.translations[0]
        return json_response(SpeechOut(
            transcript.text, " ".join(s.translation for s in segments), segments, round(transcript.duration_s, 2),
            MODEL, first.model, first.tier, result.billed_characters,
            None if form.reference is None else round(word_error_rate(form.reference, transcript.text), 3)))

    return [Operation("/v1/speech", ("POST",), speech, NATIVE,
                      "Transcribe English speech (WAV, FLAC or OGG) and translate it, segment by utterance",
                      SpeechUpload, SpeechOut, consumes=UPLOAD, auth=True)]


def _stream_limits(config: MediaConfig) -> StreamLimits:
    return StreamLimits(config.stream_max_s, config.stream_max_chunk_bytes, config.stream_partial_every_s,
                        config.stream_max_utterance_s)


def _close_code(exc: PeakgateError) -> int:
    if isinstance(exc, InputTooLarge):
        return WS_TOO_BIG
    return WS_TRY_LATER if isinstance(exc, Rejected) else WS_POLICY


async def _start(ws: WebSocket, service: TranslationService, principal: Principal) -> tuple[StreamStart, Translator]:
    message = (await ws.receive()).get("text")
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
    return start, _translator(service, principal, source, target)


async def _serve_stream(ws: WebSocket, service: TranslationService, pool: Runner, principal: Principal) -> None:
    start, translate = await _start(ws, service, principal)

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


def speech_routes(service: TranslationService, pool: Runner) -> list[BaseRoute]:
    def record(status: int) -> None:
        # One request per stream, with the status POST /v1/speech would have answered (ok, refused, failed).
        service.metrics.requests.labels(endpoint=STREAM_PATH, tier=NO_TIER, status=str(status)).inc()

    async def websocket(ws: WebSocket) -> None:
        await ws.accept()  # accept first: only an accepted socket carries a close code and reason
        try:
            principal = service.authenticate(_ws_key(ws))
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
            await _serve_stream(ws, service, pool, principal)
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
