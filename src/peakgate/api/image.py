"""POST /v1/image: the text in an image, recognised (OCR), translated, and optionally drawn back over it.

multipart/form-data: `file` (PNG, JPEG or TIFF, told by content), `target`, `source` (optional, "auto"),
`tier`, `glossary_id`, `overlay` (true: draw the translation over each line's box), `format` (json, or png for
the drawn image itself). The file is checked before any engine sees it (`media.image`); OCR and drawing run in
the media pool (`media.pool`), admitted by megapixels. The recognised lines are translated as one request, one
segment per line, at document priority (behind interactive text), through the service's pipeline (cache,
TM, glossary, PII redaction). Under the degradation ladder the overlay is the first thing dropped (JSON answers
without it; format=png answers 503 + Retry-After).

Images over `image_sync_max_megapixels` (up to `image_max_megapixels`), or any with `async=true`, become an async
job (`media.jobs`): 202 with `status_url`, `GET /v1/image/jobs/{job_id}` answers the status and, once done,
this endpoint's JSON as `result`; a job that asked for the overlay draws it on demand at
`GET /v1/image/jobs/{job_id}/overlay` (PNG, in the pool, under the same ladder rule).
See docs/multimodal.md.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Literal

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import json_response, source_or_detect
from peakgate.api.contract import TranslationService
from peakgate.api.endpoint import UPLOAD, Operation, set_served
from peakgate.api.errors import NATIVE
from peakgate.api.uploads import MediaUpload, upload_form
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.errors import BadRequest, InputTooLarge, Overloaded, UnsupportedPair
from peakgate.jobs.model import Job, NewJob
from peakgate.media.image import ImageInfo, inspect_image
from peakgate.media.jobs import (
    JobCreated,
    JobNotReady,
    JobState,
    MediaService,
    accepted,
    answer_mode,
    finished_layout,
    owned,
    state,
    submit,
)
from peakgate.media.ocr import Block, Box, find_ocr, recognise
from peakgate.media.overlay import render_overlay
from peakgate.media.pool import MediaPool

_ENVELOPE_BYTES = 64 * 1024  # form fields and boundaries around the file
_JOBS = "/v1/image/jobs"
_OVERLAY = "overlay"  # an image job's `format`: the overlay was asked for
_TRUE, _FALSE = frozenset({"true", "1", "yes", "on"}), frozenset({"false", "0", "no", "off", ""})


class ImageUpload(MediaUpload, kw_only=True):
    """The multipart fields of POST /v1/image; `source` None or "auto": detected from the recognised text."""

    overlay: bool = False
    format: Literal["json", "png"] = "json"


class LineOut(msgspec.Struct):
    box: tuple[int, int, int, int]  # x, y, width, height in pixels
    text: str
    translation: str


class BlockOut(msgspec.Struct):
    box: tuple[int, int, int, int]
    lines: list[LineOut]


class ImageReply(msgspec.Struct, omit_defaults=True):
    width: int
    height: int
    blocks: list[BlockOut]
    billed_characters: int
    detected_source: str | None = None
    model: str | None = None
    tier: str | None = None
    overlay_png: str | None = None  # base64, when overlay=true and the ladder allowed it
    overlay_dropped: bool = False  # overlay=true was asked for, and the degradation ladder refused it


class ImageJobOut(JobState, kw_only=True, omit_defaults=True):
    result: ImageReply | None = None  # once done: what POST /v1/image answers (without the drawn image)
    overlay_url: str | None = None  # once done, when the overlay was asked for: the drawn image (PNG)


class ImageLayout(msgspec.Struct):
    """What OCR found, kept with an image job until its translations are in."""

    info: ImageInfo
    blocks: list[Block]


@dataclass(frozen=True, slots=True)
class _Ask:
    data: bytes
    name: str | None
    target: str
    source: str | None
    tier: str | None
    glossary_id: str | None
    overlay: bool
    png: bool
    asked_async: bool


def image_operations(service: MediaService, pool: MediaPool) -> list[Operation]:
    config = service.settings.media

    async def translate_image(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        ask = await _read(request, config.image_max_bytes + _ENVELOPE_BYTES)
        _check_target(service, ask.target)
        info = inspect_image(ask.data, config)
        mode = answer_mode(info.megapixels, config.image_sync_max_megapixels, asked_async=ask.asked_async,
                           jobs_enabled=service.settings.jobs.enabled)
        if mode == "refuse":
            raise InputTooLarge(f"image of {info.megapixels:.1f} megapixels is over the synchronous limit of "
                                f"{config.image_sync_max_megapixels:g}, and async jobs are off here: "
                                "send a smaller or downscaled image")
        ocr = find_ocr(config)
        reading = (ask.data, ocr.tessdata, ocr.languages_for(ask.source, config.ocr_auto_languages),
                   config.ocr_min_confidence)
        if mode == "async":
            return await _accept(service, pool, ask, info, reading, principal=principal)
        blocks = await pool.run("ocr", info.megapixels, recognise, *reading)
        result = await _translate(service, ask, blocks, principal)
        if result is not None:
            set_served(request, result)
        translations = [t.text for t in result.translations] if result is not None else []
        drawn = await _overlay(pool, ask, info, blocks, translations)
        if ask.png:
            assert drawn is not None  # _overlay answers format=png or raises
            return Response(drawn, media_type="image/png")
        return json_response(_reply(info, blocks, translations, result, drawn, dropped=ask.overlay and not drawn))

    async def image_job(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        job = await owned(service, str(request.path_params["job_id"]), principal, "image")
        out = ImageJobOut(**msgspec.structs.asdict(state(service, job)))
        if job.status == "done":
            layout, translations = await _finished(service, job)
            out.result = _reply(layout.info, layout.blocks, translations, None, None, dropped=False)
            out.result.billed_characters = job.billed_characters
            out.overlay_url = f"{_JOBS}/{job.id}/overlay" if job.format == _OVERLAY else None
        return json_response(out)

    async def job_overlay(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        job = await owned(service, str(request.path_params["job_id"]), principal, "image")
        if job.status == "error":
            raise BadRequest(f"the image job failed: {job.error_message}")
        if job.status != "done":
            raise JobNotReady(f"image job {job.id} is {job.status}", retry_after_s=5.0)
        if not pool.allows("overlay"):
            raise Overloaded("the translated image is not drawn while the service is degraded; read the "
                             "job's JSON, or retry later")
        layout, translations = await _finished(service, job)
        data = await service.job_runner.store.input_data(job.id)
        assert data is not None  # an image job keeps its image
        return Response(await _draw(pool, data, layout.info, layout.blocks, translations), media_type="image/png")

    return [
        Operation("/v1/image", ("POST",), translate_image, NATIVE,
                  "Translate the text in an image (OCR), optionally drawn over it; a large image answers 202 "
                  "with an async job", ImageUpload, ImageReply, consumes=UPLOAD,
                  produces=("application/json", "image/png"), auth=True, accepted=JobCreated),
        Operation(f"{_JOBS}/{{job_id}}", ("GET",), image_job, NATIVE, "An async image job's status and result",
                  response=ImageJobOut, auth=True),
        Operation(f"{_JOBS}/{{job_id}}/overlay", ("GET",), job_overlay, NATIVE,
                  "A done image job's translation drawn over the image", produces=("image/png",), auth=True),
    ]


async def _accept(service: MediaService, pool: MediaPool, ask: _Ask, info: ImageInfo, reading: tuple[object, ...],
                  *, principal: Principal) -> Response:
    async def recognised() -> tuple[tuple[str, ...], bytes]:
        blocks = await pool.run("ocr", info.megapixels, recognise, *reading, wait=True)
        return tuple(line.text for b in blocks for line in b.lines), msgspec.json.encode(ImageLayout(info, blocks))

    job = NewJob(tenant=principal.tenant, kind="image", source=ask.source, target=ask.target, segments=(),
                 filename=ask.name, format=_OVERLAY if ask.overlay else None, input_data=ask.data,
                 glossary_id=ask.glossary_id)
    created = await submit(service, pool, job, principal, recognised,
                           max_recognising=service.settings.media.max_recognising_jobs)
    return accepted(created, _JOBS)


async def _finished(service: MediaService, job: Job) -> tuple[ImageLayout, list[str]]:
    layout, translations = await finished_layout(service, job)
    return msgspec.json.decode(layout, type=ImageLayout), translations


async def _read(request: Request, max_bytes: int) -> _Ask:
    upload = await upload_form(request, max_bytes, "image")
    fields = upload.fields
    target = fields.get("target", "").strip().lower()
    if not target:
        raise BadRequest("missing `target`: the language to translate the image's text into")
    fmt = fields.get("format", "json").strip().lower()
    if fmt not in {"json", "png"}:
        raise BadRequest(f"`format` must be json or png, not {fmt!r}")
    return _Ask(upload.data, upload.name, target, source_or_detect(fields.get("source")), fields.get("tier") or None,
                fields.get("glossary_id") or None, _flag(fields, "overlay") or fmt == "png", fmt == "png",
                _flag(fields, "async"))


def _flag(fields: dict[str, str], name: str) -> bool:
    value = fields.get(name, "")
    word = value.strip().lower()
    if word not in _TRUE | _FALSE:
        raise BadRequest(f"`{name}` must be true or false, not {value!r}")
    return word in _TRUE


def _check_target(service: TranslationService, target: str) -> None:
    # Before OCR spends seconds on an image whose text nothing could translate.
    if not any(target in language.targets for language in service.languages()):
        raise UnsupportedPair(f"nothing translates into {target!r}; see /v1/languages")


async def _translate(service: TranslationService, ask: _Ask, blocks: list[Block], principal: Principal
                     ) -> TranslateResult | None:
    segments = tuple(line.text for block in blocks for line in block.lines)
    if not segments:
        return None  # no text found: nothing to translate or bill
    # A long task's text queues as a document: behind interactive text, within its own deadline.
    request = TranslateRequest(segments=segments, source=ask.source, target=ask.target, tier=ask.tier,
                               glossary_id=ask.glossary_id, priority="document")
    return await service.translate(request, principal)


async def _overlay(pool: MediaPool, ask: _Ask, info: ImageInfo, blocks: list[Block], translations: list[str]
                   ) -> bytes | None:
    if not ask.overlay:
        return None
    if not pool.allows("overlay"):
        if ask.png:
            raise Overloaded("the translated image is not drawn while the service is degraded; ask for "
                             "format=json, or retry later")
        return None
    return await _draw(pool, ask.data, info, blocks, translations)


async def _draw(pool: MediaPool, data: bytes, info: ImageInfo, blocks: list[Block], translations: list[str]) -> bytes:
    boxes = [line.box for block in blocks for line in block.lines]
    return await pool.run("ocr", info.megapixels, render_overlay, data, list(zip(boxes, translations, strict=True)))


def _reply(info: ImageInfo, blocks: list[Block], translations: list[str], result: TranslateResult | None,
           drawn: bytes | None, *, dropped: bool) -> ImageReply:
    texts = iter(translations)
    out = [BlockOut(_box(b.box), [LineOut(_box(line.box), line.text, next(texts)) for line in b.lines])
           for b in blocks]
    first = result.translations[0] if result is not None and result.translations else None
    return ImageReply(
        info.width, info.height, out, result.billed_characters if result is not None else 0,
        detected_source=first.detected_source if first else None, model=first.model if first else None,
        tier=first.tier if first else None,
        overlay_png=base64.b64encode(drawn).decode("ascii") if drawn is not None else None, overlay_dropped=dropped,
    )


def _box(box: Box) -> tuple[int, int, int, int]:
    return box.x, box.y, box.w, box.h
