"""Language coverage: which pairs can be served (directly or through a pivot), and the source of a request
that does not name one (detected, or refused by name when nothing serves it).

One table, built once from the routed models, answers the three dialects' language lists, the pivot plans
and the detection candidates alike, so what is listed is exactly what is served.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from types import MappingProxyType

from peakgate.api.contract import Language
from peakgate.config import Settings
from peakgate.domain import TranslateRequest
from peakgate.errors import UnsupportedPair, UnsupportedSource
from peakgate.routing.langdetect import Detector, build_detector, lingua_language
from peakgate.routing.pivot import Plan, plan, reachable
from peakgate.routing.router import serves

# Languages Apertium serves that lingua has no model for (lingua's names cover the rest).
_NAMES: Mapping[str, str] = MappingProxyType({
    "gl": "Galician", "oc": "Occitan", "an": "Aragonese", "ast": "Asturian", "sc": "Sardinian", "co": "Corsican",
    "br": "Breton", "mt": "Maltese", "tt": "Tatar", "nn": "Nynorsk", "nb": "Norwegian Bokmål",
})
_REGIONS: Mapping[str, str] = MappingProxyType({"us": "American", "gb": "British", "br": "Brazilian",
                                                 "pt": "European"})


def same_language(source: str, target: str) -> bool:
    """Whether `source` text is already in `target`'s language (its base: "en" is already "en-US")."""
    return source.lower().split("-", 1)[0] == target.lower().replace("_", "-").split("-", 1)[0]


def language_name(code: str) -> str:
    """"de" -> "German", "pt-br" -> "Portuguese (Brazilian)"; the code itself when unknown."""
    base, _, region = code.lower().partition("-")
    lang = lingua_language(base)
    name = lang.name.title() if lang is not None else _NAMES.get(base, code)
    return f"{name} ({_REGIONS[region]})" if region in _REGIONS else name


class Coverage:
    """The served pairs of the models the router routes to (those in a tier; all when no tiers are set)."""

    def __init__(self, settings: Settings, detector: Detector | None = None) -> None:
        routed = {name for chain in settings.tiers.values() for name in chain}
        self._models = tuple(m for m in settings.models if not routed or m.name in routed)
        self._pivots = settings.pivot.languages if settings.pivot.enabled else ()
        self._min_confidence = settings.detection.min_confidence
        self._all = {m.name: m for m in settings.models}  # an explicit model need not be in a tier
        self.sources = tuple(sorted({m.source for m in self._models}))
        self._detector = detector if detector is not None else build_detector(settings.detection, self.sources)
        self._table = reachable(self.sources, {m.target for m in self._models}, self._direct, self._pivots)
        # Per request, answered from a bounded cache: the codes come from clients, so the cache must not grow.
        self.plan = functools.lru_cache(maxsize=1024)(self._plan)
        self._sources_into = functools.lru_cache(maxsize=256)(self._find_sources_into)

    def _direct(self, source: str, target: str) -> bool:
        return any(serves(m, source, target) for m in self._models)

    def _plan(self, source: str, target: str) -> Plan | None:
        """How `source` -> `target` is served (directly, or through which pivot); None: it is not."""
        return plan(source, target, self._direct, self._pivots)

    def for_engines(self, request: TranslateRequest) -> TranslateRequest:
        """`request` with the target its models declare: a model for "en" serves "en-gb" too, but the engines
        check the exact pair they are given. A regional target keeps its code where a model declares it."""
        source, target = request.source or "", request.target.lower()
        explicit = self._all.get(request.model) if request.model is not None else None
        candidates = [m for m in ((explicit,) if explicit else self._models) if serves(m, source, target)]
        if not candidates or any(m.target.lower() == target for m in candidates):
            return request
        return dataclasses.replace(request, target=candidates[0].target)

    def warm(self) -> None:
        """Load the detection models now (blocking, seconds): off the event loop, at start-up."""
        self._detector.warm()

    def languages(self) -> list[Language]:
        return [Language(source, language_name(source), tuple(targets)) for source, targets in self._table.items()]

    def unsupported(self, source: str, target: str) -> UnsupportedPair:
        pairs = [str(p) for targets in self._table.values() for p in targets.values()]
        return UnsupportedPair(f"no model serves {source}->{target}, directly or through a pivot language "
                               f"({', '.join(self._pivots) or 'none'}); served pairs: {', '.join(pairs) or 'none'}")

    def check(self, source: str | None, target: str) -> None:
        """`UnsupportedPair` unless the pair can be served (None: some source can reach `target`)."""
        if source is None:
            self._sources_into(target)
        elif self.plan(source, target) is None:
            raise self.unsupported(source, target)

    def detect(self, text: str) -> list[tuple[str, float]]:
        return self._detector.detect(text)

    def source_of(self, text: str, target: str) -> str:
        """The detected source language of `text` among those that reach `target`.

        Text without any language cue ("OK", digits) falls back to English, else the first such source. A
        language nothing serves into `target` is refused by name (`UnsupportedSource`), unless it scored below
        `detection.min_confidence` and a served one scored too: short strings are ambiguous.
        """
        candidates = self._sources_into(target)
        ranked = self._detector.detect(text)
        if not ranked:
            return "en" if "en" in candidates else candidates[0]
        top, confidence = ranked[0]
        if top in candidates or same_language(top, target):  # already in the target: served unchanged
            return top
        served = [lang for lang, _ in ranked if lang in candidates]
        if served and confidence < self._min_confidence:
            return served[0]
        found = f"detected source language {language_name(top)} ({top}, confidence {confidence:.2f})"
        if top in self.sources:
            raise UnsupportedSource(f"{found} cannot be translated into {target}; sources served into {target}: "
                                    f"{', '.join(candidates)}")
        raise UnsupportedSource(f"{found} is not served; served sources: {', '.join(self.sources)}")

    def _find_sources_into(self, target: str) -> tuple[str, ...]:
        candidates = tuple(source for source in self.sources if self.plan(source, target) is not None)
        if not candidates:
            targets = sorted({t for targets in self._table.values() for t in targets})
            raise UnsupportedPair(f"no model translates into {target}; served targets: {', '.join(targets)}")
        return candidates
