"""LibreTranslate compatibility: /translate, /detect, /languages, with fields in JSON, a form or the query.

`format=html` translates the text of HTML and keeps its markup (`markup`, docs/markup.md); a format other than
text or html is a 400. `alternatives` is accepted; no alternatives are produced.
Confidences are percentages (0-100), as LibreTranslate reports them.
"""

from __future__ import annotations

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import BodyParser, as_segments, json_response, max_body_bytes, source_or_detect
from peakgate.api.contract import TranslationService
from peakgate.api.endpoint import FORM_BODIES, Operation, set_served
from peakgate.api.errors import LIBRE
from peakgate.api.native import LanguageOut, language_list
from peakgate.domain import Principal, TranslateRequest
from peakgate.markup import format_options, translate_markup


class Keyed(msgspec.Struct, kw_only=True):
    api_key: str | None = None


class TranslateBody(Keyed, kw_only=True):
    q: str | list[str]
    target: str
    source: str = "auto"
    format: str = "text"
    alternatives: int = 0


class DetectBody(Keyed, kw_only=True):
    q: str


class Detected(msgspec.Struct):
    confidence: float
    language: str


class TranslateReply(msgspec.Struct, omit_defaults=True, rename="camel"):  # translatedText, detectedLanguage
    translated_text: str | list[str]
    detected_language: Detected | list[Detected] | None = None  # only when the source was "auto"


def _percent(confidence: float) -> float:
    return round(confidence * 100.0, 1)


def libre_operations(service: TranslationService) -> list[Operation]:
    max_bytes = max_body_bytes(service.settings.limits)
    translate_parser = BodyParser(TranslateBody, max_bytes)
    detect_parser = BodyParser(DetectBody, max_bytes)

    def authenticate(request: Request, body: Keyed) -> Principal:
        return service.authenticate(body.api_key or header_key(request, "Bearer"))

    def detected(text: str, language: str) -> Detected:
        # The confidence of the language the service chose, as the detector scores this one text.
        score = next((conf for lang, conf in service.detect(text) if lang == language), 0.0)
        return Detected(_percent(score), language)

    async def translate(request: Request) -> Response:
        body = await translate_parser.parse(request)
        source = source_or_detect(body.source)
        segments = as_segments(body.q)
        job = TranslateRequest(segments=segments, source=source, target=body.target.strip().lower())
        principal = authenticate(request, body)
        result = await translate_markup(service.translate, service.settings.limits, job, principal,
                                        format_options(body.format))
        set_served(request, result)
        texts = [t.text for t in result.translations]
        found = None if source is not None else [
            detected(s, t.detected_source) for s, t in zip(segments, result.translations, strict=True)
        ]
        if isinstance(body.q, str):
            return json_response(TranslateReply(texts[0], found[0] if found else None))
        return json_response(TranslateReply(texts, found))

    async def detect(request: Request) -> Response:
        body = await detect_parser.parse(request)
        authenticate(request, body)
        return json_response([Detected(_percent(conf), lang) for lang, conf in service.detect(body.q)])

    async def languages(_request: Request) -> Response:
        return json_response(language_list(service))

    return [
        Operation("/translate", ("POST",), translate, LIBRE, "LibreTranslate-compatible translate", TranslateBody,
                  TranslateReply, consumes=FORM_BODIES, auth=True),
        Operation("/detect", ("POST",), detect, LIBRE, "LibreTranslate-compatible language detection", DetectBody,
                  list[Detected], consumes=FORM_BODIES, auth=True),
        Operation("/languages", ("GET",), languages, LIBRE, "LibreTranslate-compatible languages",
                  response=list[LanguageOut]),
    ]
