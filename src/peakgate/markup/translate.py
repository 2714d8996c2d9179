"""Translate marked-up texts through the ordinary pipeline: only their sentences go to the service.

Every sentence (and every tagged part of one, translated alone to find its tags again) of every text goes
into one `TranslateRequest` with the caller's options, so admission, billing, cache, translation memory, PII
redaction, glossaries and batching apply to markup exactly as to plain text. A request with more sentences
than one request may carry is sent in consecutive requests within the limits, the first one's detected source
language pinned for the rest. Each text then comes back rebuilt, attributed to the model of its first sentence.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence

from peakgate.config import LimitsConfig
from peakgate.domain import Principal, TranslateRequest, TranslateResult, Translation
from peakgate.markup.document import MarkupDocument, parse_markup
from peakgate.markup.options import MarkupOptions

Translate = Callable[[TranslateRequest, Principal], Awaitable[TranslateResult]]  # the service's translate


def _chunks(texts: Sequence[str], limits: LimitsConfig) -> list[list[str]]:
    chunks: list[list[str]] = [[]]
    characters = 0
    for text in texts:
        full = len(chunks[-1]) >= limits.max_segments or characters + len(text) > limits.max_request_chars
        if chunks[-1] and full:
            chunks.append([])
            characters = 0
        chunks[-1].append(text)
        characters += len(text)
    return chunks


def _attributed(text: str, units: list[Translation], fallback: str) -> Translation:
    """The rebuilt text, attributed to its first sentence's model (its only one's TM score, if one)."""
    if not units:
        return Translation(text, fallback, "none", "none", "unchanged")
    first = units[0]
    origins = {unit.origin for unit in units}
    origin = first.origin if len(origins) == 1 else "engine"
    score = first.tm_score if len(units) == 1 else None
    pivot = next((unit.pivot for unit in units if unit.pivot), None)
    return Translation(text, first.detected_source, first.model, first.tier, origin, score, pivot)


async def _translate_all(translate: Translate, limits: LimitsConfig, request: TranslateRequest,
                         principal: Principal, texts: list[str]) -> tuple[dict[str, Translation], int, str | None]:
    done: dict[str, Translation] = {}
    billed = 0
    degraded = None
    for chunk in _chunks(texts, limits):
        result = await translate(dataclasses.replace(request, segments=tuple(chunk)), principal)
        done.update(zip(chunk, result.translations, strict=True))
        billed += result.billed_characters
        degraded = degraded or result.degraded
        first = result.translations[0] if result.translations else None
        # One language for the whole request; text already in the target language is detected anew each time.
        if request.source is None and first is not None and first.origin != "unchanged":
            request = dataclasses.replace(request, source=first.detected_source)
    return done, billed, degraded


async def translate_markup(translate: Translate, limits: LimitsConfig, request: TranslateRequest,
                           principal: Principal, options: MarkupOptions | None) -> TranslateResult:
    """`request.segments` are marked-up texts (plain text when `options` is None): one rebuilt translation each.
    `translate` is the service's (or a wrapper of it), `limits` the service's request limits."""
    if options is None:
        return await translate(request, principal)
    # Parsing and rebuilding take a second or more per megabyte of markup: off the event loop.
    documents = await asyncio.to_thread(_parse_all, request, options)
    wanted = list(dict.fromkeys(text for document in documents for text in document.texts()))
    done, billed, degraded = ({}, 0, None) if not wanted else await _translate_all(
        translate, limits, request, principal, wanted)
    translations = await asyncio.to_thread(_rebuild_all, documents, done, request.source or "")
    return TranslateResult(tuple(translations), billed, degraded)


def _parse_all(request: TranslateRequest, options: MarkupOptions) -> list[MarkupDocument]:
    return [parse_markup(text, options, split=request.split_sentences) for text in request.segments]


def _rebuild_all(documents: list[MarkupDocument], done: dict[str, Translation], source: str) -> list[Translation]:
    translations = []
    for document in documents:
        rebuilt = document.rebuild({text: done[text].text for text in document.texts()})
        units = [done[sentence.source] for sentence in document.sentences]
        translations.append(_attributed(rebuilt, units, source))
    return translations
