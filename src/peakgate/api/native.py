"""The native API: /v1/translate, /v1/languages and the operational endpoints (health, readiness, metrics)."""

from __future__ import annotations

from typing import Annotated, Literal

import msgspec
from prometheus_client import CONTENT_TYPE_LATEST
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import BodyParser, as_segments, json_response, max_body_bytes, source_or_detect
from peakgate.api.contract import TranslationService
from peakgate.api.edge import edge_operation
from peakgate.api.endpoint import Operation, set_served
from peakgate.api.errors import NATIVE, retry_after
from peakgate.domain import TranslateRequest, TranslateResult
from peakgate.errors import BadRequest
from peakgate.markup import options_from, translate_markup


class TranslateBody(msgspec.Struct, kw_only=True):
    target: str
    segments: list[str] | None = None
    text: str | list[str] | None = None  # shorthand for `segments`
    source: str | None = None  # None or "auto": detect
    tier: str | None = None  # a tier name, or a hint: "fast" / "balanced" / "quality"
    model: str | None = None
    priority: Literal["interactive", "document", "batch"] | None = None
    deadline_ms: Annotated[float, msgspec.Meta(gt=0)] | None = None
    split_sentences: bool = True
    glossary_id: str | None = None
    formality: str | None = None
    tag_handling: str | None = None  # "html" | "xml": translate the text, keep the markup (docs/markup.md)
    splitting_tags: str | list[str] | None = None
    non_splitting_tags: str | list[str] | None = None
    ignore_tags: str | list[str] | None = None
    outline_detection: bool = True


class TranslationOut(msgspec.Struct, omit_defaults=True):
    text: str
    detected_source: str
    model: str
    tier: str
    origin: str = "engine"  # engine | cache | tm_exact | tm_repaired
    tm_score: float | None = None  # the translation memory's match score when it served the segment
    pivot: str | None = None  # the language it went through when no model serves the pair directly


class CorrectionBody(msgspec.Struct, kw_only=True):
    source_lang: str
    target_lang: str
    source: str
    target: str


class CorrectionReply(msgspec.Struct):
    inserted: int
    updated: int
    kept: int


class TranslateReply(msgspec.Struct):
    translations: list[TranslationOut]
    billed_characters: int


class LanguageOut(msgspec.Struct):
    code: str
    name: str
    targets: list[str]


class Status(msgspec.Struct):
    status: str


def language_list(service: TranslationService) -> list[LanguageOut]:
    return [LanguageOut(lang.code, lang.name, list(lang.targets)) for lang in service.languages()]


def _to_domain(body: TranslateBody) -> TranslateRequest:
    if body.segments is not None:
        segments = tuple(body.segments)
    elif body.text is not None:
        segments = as_segments(body.text)
    else:
        raise BadRequest("send `segments` (a list of strings) or `text`")
    return TranslateRequest(
        segments=segments, source=source_or_detect(body.source), target=body.target.strip().lower(),
        tier=body.tier, model=body.model, priority=body.priority, deadline_ms=body.deadline_ms,
        split_sentences=body.split_sentences, glossary_id=body.glossary_id, formality=body.formality,
    )


def _render(result: TranslateResult) -> Response:
    translations = [TranslationOut(t.text, t.detected_source, t.model, t.tier, t.origin, t.tm_score, t.pivot)
                    for t in result.translations]
    return json_response(TranslateReply(translations, result.billed_characters))


def native_operations(service: TranslationService) -> list[Operation]:
    parser = BodyParser(TranslateBody, max_body_bytes(service.settings.limits))
    corrections = BodyParser(CorrectionBody, max_body_bytes(service.settings.limits))

    async def translate(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        body = await parser.parse(request)
        result = await translate_markup(service.translate, service.settings.limits, _to_domain(body), principal,
                                        options_from(body))
        set_served(request, result)
        return _render(result)

    async def correct(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        body = await corrections.parse(request)
        added = service.add_correction(principal, body.source_lang, body.target_lang, body.source, body.target)
        return json_response(CorrectionReply(added.inserted, added.updated, added.kept), 201)

    async def languages(_request: Request) -> Response:
        return json_response(language_list(service))

    async def healthz(_request: Request) -> Response:
        return json_response(Status("ok"))

    async def readyz(_request: Request) -> Response:
        state = service.readiness()
        response = json_response(Status(state.status), 200 if state.ready else 503)
        if not state.ready:
            response.headers["Retry-After"] = retry_after(state.retry_after_s or 1.0)
        return response

    async def metrics(_request: Request) -> Response:
        return Response(service.metrics.render(), media_type=CONTENT_TYPE_LATEST)

    return [
        Operation("/v1/translate", ("POST",), translate, NATIVE, "Translate segments", TranslateBody,
                  TranslateReply, auth=True),
        edge_operation(service, _render, TranslateReply),
        Operation("/v1/memory", ("POST",), correct, NATIVE, "Add a human translation (correction) to your TM",
                  CorrectionBody, CorrectionReply, statuses=(201,), auth=True),
        Operation("/v1/languages", ("GET",), languages, NATIVE, "Languages and their targets",
                  response=list[LanguageOut]),
        Operation("/healthz", ("GET",), healthz, NATIVE, "Liveness", response=Status),
        Operation("/readyz", ("GET",), readyz, NATIVE, "Readiness: 503 until every model is warm", response=Status,
                  statuses=(200, 503)),
        Operation("/metrics", ("GET",), metrics, NATIVE, "Prometheus metrics", produces=(CONTENT_TYPE_LATEST,)),
    ]
