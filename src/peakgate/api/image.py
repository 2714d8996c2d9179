"""POST /v1/image: the text in an image, recognised (OCR), translated, and optionally drawn back over it.

multipart/form-data: `file` (PNG, JPEG or TIFF, told by content), `target`, `source` (optional, "auto"),
`tier`, `glossary_id`, `overlay` (true: draw the translation over each line's box), `format` (json, or png for
the drawn image itself). The file is checked before any engine sees it (`media.image`); OCR and drawing run in
the media pool (`media.pool`), admitted by megapixels. The recognised lines are translated as one request, one
segment per line, at document priority (behind interactive text), through the service's pipeline (cache,
TM, glossary, PII redaction). Images over `image_sync_max_megapixels` are refused (413): there is no async
image job yet. Under the degradation ladder the overlay is the first thing dropped (JSON answers without it;
format=png answers 503 + Retry-After).
See docs/multimodal.md.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Literal

import msgspec
from starlette.datastructures import UploadFile
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import MULTIPART, json_response, media_type_of, multipart_form, read_capped, source_or_detect
from peakgate.api.contract import TranslationService
from peakgate.api.endpoint import UPLOAD, FilePart, Operation, set_served
from peakgate.api.errors import NATIVE
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.errors import BadRequest, InputTooLarge, Overloaded, UnsupportedPair
from peakgate.media.image import ImageInfo, inspect_image
from peakgate.media.ocr import Block, Box, find_ocr, recognise
from peakgate.media.overlay import render_overlay
from peakgate.media.pool import MediaPool

_ENVELOPE_BYTES = 64 * 1024  # form fields and boundaries around the file
_TRUE, _FALSE = frozenset({"true", "1", "yes", "on"}), frozenset({"false", "0", "no", "off", ""})


class ImageUpload(msgspec.Struct, kw_only=True):
    """The multipart fields of POST /v1/image (for the OpenAPI document; parsed by hand)."""

    file: FilePart
    target: str
    source: str | None = None  # None or "auto": detect from the recognised text
    tier: str | None = None
    glossary_id: str | None = None
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


@dataclass(frozen=True, slots=True)
class _Ask:
    data: bytes
    target: str
    source: str | None
    tier: str | None
    glossary_id: str | None
    overlay: bool
    png: bool


def image_operations(service: TranslationService, pool: MediaPool) -> list[Operation]:
    config = service.settings.media

    async def translate_image(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        ask = await _read(request, config.image_max_bytes + _ENVELOPE_BYTES)
        _check_target(service, ask.target)
        info = inspect_image(ask.data, config)
        if info.megapixels > config.image_sync_max_megapixels:
            raise InputTooLarge(f"image of {info.megapixels:.1f} megapixels is over the synchronous limit of "
                                f"{config.image_sync_max_megapixels:g}; async image jobs are not served yet: "
                                "send a smaller or downscaled image")
        ocr = find_ocr(config)
        languages = ocr.languages_for(ask.source, config.ocr_auto_languages)
        blocks = await pool.run("ocr", info.megapixels, recognise, ask.data, ocr.tessdata, languages,
                                config.ocr_min_confidence)
        result = await _translate(service, ask, blocks, principal)
        if result is not None:
            set_served(request, result)
        translations = [t.text for t in result.translations] if result is not None else []
        drawn = await _overlay(pool, ask, info, blocks, translations)
        if ask.png:
            assert drawn is not None  # _overlay answers format=png or raises
            return Response(drawn, media_type="image/png")
        return json_response(_reply(info, blocks, translations, result, drawn, dropped=ask.overlay and not drawn))

    return [Operation("/v1/image", ("POST",), translate_image, NATIVE,
                      "Translate the text in an image (OCR), optionally drawn over it", ImageUpload, ImageReply,
                      consumes=UPLOAD, produces=("application/json", "image/png"), auth=True)]


async def _read(request: Request, max_bytes: int) -> _Ask:
    if media_type_of(request) != MULTIPART:
        raise BadRequest("upload the image as multipart/form-data with a `file` part")
    body = await read_capped(request, max_bytes)
    async with multipart_form(request, body) as form:
        fields = {k: v for k, v in form.multi_items() if isinstance(v, str)}
        upload = form.get("file")
        if not isinstance(upload, UploadFile):
            raise BadRequest("missing the `file` part: send the image as a multipart file")
        data = await upload.read()
    target = fields.get("target", "").strip().lower()
    if not target:
        raise BadRequest("missing `target`: the language to translate the image's text into")
    fmt = fields.get("format", "json").strip().lower()
    if fmt not in {"json", "png"}:
        raise BadRequest(f"`format` must be json or png, not {fmt!r}")
    return _Ask(data, target, source_or_detect(fields.get("source")), fields.get("tier") or None,
                fields.get("glossary_id") or None, _flag(fields.get("overlay", "")) or fmt == "png", fmt == "png")


def _flag(value: str) -> bool:
    word = value.strip().lower()
    if word not in _TRUE | _FALSE:
        raise BadRequest(f"`overlay` must be true or false, not {value!r}")
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
    boxes = [line.box for block in blocks for line in block.lines]
    return await pool.run("ocr", info.megapixels, render_overlay, ask.data, list(zip(boxes, translations,
                                                                                       strict=True)))


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
