"""From recognised utterances to translated segments, shared by `POST /v1/speech` and its WebSocket stream.

Each utterance is one segment of a normal translate request, so the text path's cache, TM, glossary, PII
redaction and billing all apply to what was heard; nothing here logs the transcript.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence

import msgspec

from peakgate.api.contract import Language
from peakgate.domain import TranslateResult
from peakgate.errors import BadRequest, UnsupportedPair
from peakgate.media.asr import LANGUAGES, Utterance

# Segments -> the service's result; the caller binds the principal, languages and glossary.
Translator = Callable[[tuple[str, ...]], Awaitable[TranslateResult]]


class SegmentOut(msgspec.Struct):
    start_s: float
    end_s: float
    text: str
    translation: str


def check_languages(source: str | None, target: str, languages: Sequence[Language]) -> tuple[str, str]:
    """(source, target), lower-cased, when speech in `source` can be recognised and translated into `target`."""
    source = (source or "").strip().lower()
    source = LANGUAGES[0] if source in ("", "auto") else source  # one language recognised: nothing to detect
    target = target.strip().lower()
    if source not in LANGUAGES:
        raise BadRequest(f"speech in {source!r} is not supported: the recogniser understands "
                         f"{', '.join(LANGUAGES)} only")
    targets = next((lang.targets for lang in languages if lang.code == source), ())
    if target not in targets:
        raise UnsupportedPair(f"cannot translate {source} speech into {target!r}; served targets: "
                              f"{', '.join(sorted(targets)) or 'none'}")
    return source, target


async def translate_utterances(translate: Translator, utterances: Sequence[Utterance]
                               ) -> tuple[list[SegmentOut], TranslateResult]:
    """One translated segment per utterance, with its times."""
    result = await translate(tuple(u.text for u in utterances))
    segments = [SegmentOut(round(u.start_s, 2), round(u.end_s, 2), u.text, t.text)
                for u, t in zip(utterances, result.translations, strict=True)]
    return segments, result
