"""DeepL API v2 compatibility: /v2/translate, /v2/usage, /v2/languages, as the official SDKs call them.

Language codes are DeepL's upper-case ones ("ES", "EN-US", "PT-BR"); the service sees them lower-case, sources
as base codes and targets with their region ("en-us"), which picks a regional model where one is installed (a
model for the base language serves the region otherwise). `glossary_id` applies a glossary made with
/v2/glossaries or /v3/glossaries; `context` is accepted and ignored, like any unknown field. `tag_handling`
(html or xml) translates only the text of marked-up input, with DeepL's tag options (`markup`, docs/markup.md).
Languages, `formality` and `model_type` are checked as DeepL checks them (`api.deepl_checks`), and `model_type`
gets `model_type_used` back.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from types import MappingProxyType

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import BodyParser, as_segments, json_response, max_body_bytes, source_or_detect
from peakgate.api.contract import Language, TranslationService
from peakgate.api.deepl_checks import Served, check_text, model_type_used, translate_with_model_type
from peakgate.api.endpoint import FORM_BODIES, Operation, set_served
from peakgate.api.errors import DEEPL
from peakgate.domain import Principal, TranslateRequest
from peakgate.errors import BadRequest
from peakgate.markup import options_from, translate_markup
from peakgate.routing.languages import language_name

# DeepL lists only regional targets for these; "EN" and "PT" are rejected as targets by its SDKs.
_REGIONAL_TARGETS: Mapping[str, tuple[tuple[str, str], ...]] = MappingProxyType({
    "en": (("EN-GB", "English (British)"), ("EN-US", "English (American)")),
    "pt": (("PT-BR", "Portuguese (Brazilian)"), ("PT-PT", "Portuguese (European)")),
})
# DeepL Pro reports a limit even when it is unlimited; 0 would read as "limit reached" to the SDKs.
_UNLIMITED = 1_000_000_000_000
_SPLIT = MappingProxyType({"0": False, "1": True, "nonewlines": True})


class Keyed(msgspec.Struct, kw_only=True):
    auth_key: str | None = None  # legacy clients send the key as a field


class TranslateBody(Keyed, kw_only=True):
    target_lang: str
    text: str | list[str] = msgspec.field(default_factory=list)
    source_lang: str | None = None
    formality: str | None = None
    split_sentences: str | int | None = None  # "0", "1" or "nonewlines"
    tag_handling: str | None = None  # html | xml
    splitting_tags: str | list[str] | None = None  # comma-separated, or repeated
    non_splitting_tags: str | list[str] | None = None
    ignore_tags: str | list[str] | None = None
    outline_detection: bool = True
    context: str | None = None
    glossary_id: str | None = None
    model_type: str | None = None


class LanguagesQuery(Keyed, kw_only=True):
    type: str = "source"


class TranslationOut(msgspec.Struct, omit_defaults=True):
    detected_source_language: str
    text: str
    billed_characters: int
    model_type_used: str | None = None  # only when `model_type` was sent, as DeepL answers


class TranslateReply(msgspec.Struct):
    translations: list[TranslationOut]


class UsageOut(msgspec.Struct):
    character_count: int
    character_limit: int


class LanguageOut(msgspec.Struct):
    language: str
    name: str
    supports_formality: bool = False


def base_code(deepl_code: str) -> str:
    """"EN-US" → "en"."""
    return deepl_code.strip().partition("-")[0].lower()


def _target(body: TranslateBody) -> str:
    # Glossaries are per base language, as DeepL's are (an "EN" glossary serves EN-GB and EN-US alike).
    return base_code(body.target_lang) if body.glossary_id else body.target_lang.strip().lower()


def _split(value: str | int | None) -> bool:
    if value is None:
        return True
    split = _SPLIT.get(str(value).lower())
    if split is None:
        raise BadRequest("Value for 'split_sentences' not supported: use 0, 1 or nonewlines")
    return split


def _to_domain(body: TranslateBody) -> TranslateRequest:
    return TranslateRequest(
        segments=as_segments(body.text), source=source_or_detect(body.source_lang and base_code(body.source_lang)),
        target=_target(body), split_sentences=_split(body.split_sentences),  # formality: checked, no engine has it
        glossary_id=body.glossary_id or None,
    )


def _targets(languages: list[Language]) -> list[LanguageOut]:
    """Every served target in DeepL's codes: "en" as EN-GB and EN-US, "pt-br" (a regional model) as PT-BR."""
    out: dict[str, LanguageOut] = {}
    for code in {target for lang in languages for target in lang.targets}:
        for deepl_code, name in _REGIONAL_TARGETS.get(code, ((code.upper(), language_name(code)),)):
            out[deepl_code] = LanguageOut(deepl_code, name)
    return [out[code] for code in sorted(out)]


def served_codes(languages: list[Language]) -> Served:
    """What `target_lang` / `source_lang` may name, in the codes `/v2/languages` lists."""
    return Served.of(languages, (out.language for out in _targets(languages)))


def deepl_operations(service: TranslationService) -> list[Operation]:
    max_bytes = max_body_bytes(service.settings.limits)
    translate_parser = BodyParser(TranslateBody, max_bytes)
    keyed_parser = BodyParser(Keyed, max_bytes)
    languages_parser = BodyParser(LanguagesQuery, max_bytes)

    def authenticate(request: Request, body: Keyed) -> Principal:
        return service.authenticate(header_key(request, "DeepL-Auth-Key") or body.auth_key)

    async def translate(request: Request) -> Response:
        body = await translate_parser.parse(request)
        principal = authenticate(request, body)
        check_text(served_codes(service.languages()), body.target_lang, body.source_lang, body.formality)
        run = functools.partial(translate_with_model_type, service, model_type=body.model_type)
        result = await translate_markup(run, service.settings.limits, _to_domain(body), principal, options_from(body))
        set_served(request, result)
        segments = as_segments(body.text)
        # Billed per translation as its source length, which is how the service bills the total.
        return json_response(TranslateReply([
            TranslationOut(t.detected_source.upper(), t.text, len(source),
                           model_type_used(t.tier) if body.model_type else None)
            for t, source in zip(result.translations, segments, strict=True)
        ]))

    async def usage(request: Request) -> Response:
        used = await service.usage(authenticate(request, await keyed_parser.parse(request)))
        return json_response(UsageOut(used.character_count, used.character_limit or _UNLIMITED))

    async def languages(request: Request) -> Response:
        query = await languages_parser.parse(request)
        authenticate(request, query)
        if query.type == "target":
            return json_response(_targets(service.languages()))
        if query.type != "source":
            raise BadRequest("Value for 'type' not supported: use source or target")
        return json_response([LanguageOut(lang.code.upper(), lang.name) for lang in service.languages()])

    both = ("GET", "POST")
    return [
        Operation("/v2/translate", ("POST",), translate, DEEPL, "DeepL-compatible translate", TranslateBody,
                  TranslateReply, consumes=FORM_BODIES, auth=True),
        Operation("/v2/usage", both, usage, DEEPL, "DeepL-compatible usage", Keyed, UsageOut, consumes=FORM_BODIES,
                  auth=True),
        Operation("/v2/languages", both, languages, DEEPL, "DeepL-compatible languages (type=source|target)",
                  LanguagesQuery, list[LanguageOut], consumes=FORM_BODIES, auth=True),
    ]
