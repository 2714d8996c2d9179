"""DeepL's parameter checks for /v2/translate and /v2/document, answered in DeepL's own words.

The official SDKs turn a 400 into `DeepLException("Bad request, message: …")`, so what a client sees is the
`message` text; these use the wording DeepL's API answers with:

- an unknown `target_lang` / `source_lang` (not one this server serves): "Value for 'target_lang' not supported.";
- a `formality` outside DeepL's values: "Value for 'formality' not supported."; `more`/`less` answer
  "'formality' is not supported for given 'target_lang'." since no engine here has a formality control
  (`/v2/languages?type=target` says `supports_formality: false` for every target), while `prefer_more` /
  `prefer_less` fall back to the default, as DeepL's do for a target without formality;
- a `model_type` outside DeepL's values: "Value for 'model_type' not supported.";
- a document whose source and target are the same language: "Source and target language are equal.".

`model_type` picks a quality hint for the router (`latency_optimized` → "fast", the others → "quality"; a hint
whose tier is not configured means the default tier); `prefer_quality_optimized` falls back to the default tier
when the quality tier does not serve the pair. `model_type_used` says `latency_optimized` when the fast tier
served the text and `quality_optimized` otherwise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType

from peakgate.api.contract import Language, TranslationService
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.errors import BadRequest, UnsupportedPair
from peakgate.routing.router import QUALITY_HINTS

FORMALITIES = frozenset({"default", "more", "less", "prefer_more", "prefer_less"})
_FORMALITY_CONTROLS = frozenset({"more", "less"})  # the values DeepL refuses for a target without formality
MODEL_TYPE_HINTS: Mapping[str, str] = MappingProxyType({
    "quality_optimized": "quality", "prefer_quality_optimized": "quality", "latency_optimized": "fast",
})
_PREFERRED = "prefer_quality_optimized"
_FAST_TIER = QUALITY_HINTS["fast"]


class UnsupportedValue(BadRequest):
    code = "unsupported_value"


class FormalityNotSupported(BadRequest):
    code = "formality_not_supported"


class SameLanguage(BadRequest):
    code = "same_language"


def unsupported(name: str) -> UnsupportedValue:
    return UnsupportedValue(f"Value for '{name}' not supported.")


def _base(code: str) -> str:
    return code.partition("-")[0]


@dataclass(frozen=True, slots=True)
class Served:
    """The lower-case codes DeepL's clients may send: sources as base codes, targets with DeepL's regional
    forms (`en-gb`, `pt-br`) and the deprecated bare base (`en`)."""

    sources: frozenset[str]
    targets: frozenset[str]

    @classmethod
    def of(cls, languages: Iterable[Language], deepl_targets: Iterable[str]) -> Served:
        targets = {code.lower() for code in deepl_targets}
        return cls(frozenset(lang.code for lang in languages), frozenset(targets | {_base(t) for t in targets}))


def check_target(target_lang: str, served: Served) -> str:
    """The target in the service's spelling ("en-us"), or "Value for 'target_lang' not supported."."""
    target = target_lang.strip().lower()
    if target not in served.targets:
        raise unsupported("target_lang")
    return target


def check_source(source_lang: str | None, served: Served) -> str | None:
    """The source's base code, None for detection, or "Value for 'source_lang' not supported."."""
    if source_lang is None or source_lang.strip().lower() in {"", "auto"}:
        return None
    source = _base(source_lang.strip().lower())
    if source not in served.sources:
        raise unsupported("source_lang")
    return source


def check_formality(formality: str | None) -> None:
    """Refuses what DeepL refuses; whatever passes translates at the default formality."""
    if formality is None:
        return
    value = formality.strip().lower()
    if value not in FORMALITIES:
        raise unsupported("formality")
    if value in _FORMALITY_CONTROLS:
        raise FormalityNotSupported("'formality' is not supported for given 'target_lang'.")


def check_model_type(model_type: str | None) -> str | None:
    """The router's quality hint for a `model_type`, None when none was sent."""
    if model_type is None:
        return None
    hint = MODEL_TYPE_HINTS.get(model_type.strip().lower())
    if hint is None:
        raise unsupported("model_type")
    return hint


def check_text(served: Served, target_lang: str, source_lang: str | None, formality: str | None) -> None:
    """/v2/translate's checks, in DeepL's order: target, source, formality."""
    check_target(target_lang, served)
    check_source(source_lang, served)
    check_formality(formality)


def model_type_used(tier: str) -> str:
    return "latency_optimized" if tier == _FAST_TIER else "quality_optimized"


def check_languages_differ(source: str | None, target: str) -> None:
    """Documents only: DeepL refuses to translate a document into its own language (base codes compared)."""
    if source is not None and _base(source) == _base(target):
        raise SameLanguage("Source and target language are equal.")


async def translate_with_model_type(service: TranslationService, request: TranslateRequest, principal: Principal,
                                    model_type: str | None) -> TranslateResult:
    """Translate with `model_type`'s hint; `prefer_quality_optimized` retries on the default tier when the
    quality tier has no model for the pair."""
    hint = check_model_type(model_type)
    if hint is None:
        return await service.translate(request, principal)
    try:
        return await service.translate(dataclasses.replace(request, tier=hint), principal)
    except UnsupportedPair:
        if model_type is None or model_type.strip().lower() != _PREFERRED:
            raise
        return await service.translate(request, principal)
