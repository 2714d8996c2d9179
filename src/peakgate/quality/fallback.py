"""The quality gate on the request path: check each engine-translated segment, re-translate the failing ones
with the next engine of the tier's chain, and serve the better candidate; segments that still fail every check
go on down the chain.

`Service._submit` calls `review` after the scheduler answered. The engine's confidences come from the backend
that decoded them (the scheduler hands back text only); where none is kept (Apertium, remote workers) the
checks run without one.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from peakgate.config import ModelConfig
from peakgate.errors import PeakgateError
from peakgate.observe.metrics import Metrics
from peakgate.quality.estimate import Verdict, assess, prefer_fallback
from peakgate.quality.settings import QualityConfig
from peakgate.resilience.degrade import int8_twins
from peakgate.scheduling.split import keep_whole, split_sentences

_log = logging.getLogger(__name__)

Translate = Callable[[str, list[str]], Awaitable[list[str]]]  # (model, segments) -> outputs, in order
# (text, (source, target)) -> the detector's best (language, confidence) for `text` among the pair's two
OutputLanguage = Callable[[str, tuple[str, str]], tuple[str, float] | None]


@runtime_checkable
class Scored(Protocol):
    """A backend that remembers its recent sentences' confidences (CTranslate2Backend)."""

    def confidence(self, text: str) -> float | None: ...


@dataclass(frozen=True, slots=True)
class Reviewed:
    texts: list[str]
    models: list[str]  # the model that served each segment


class QualityGate:
    def __init__(
        self, config: QualityConfig, models: Iterable[ModelConfig], metrics: Metrics,
        backends: Mapping[str, object], output_language: OutputLanguage,
    ) -> None:
        models = tuple(models)
        self._config = config
        self._gated = frozenset(m.name for m in models if m.engine in config.engines)
        twins = int8_twins(models)
        # Same weights, same mistakes: a twin is never the second opinion.
        self._twins = frozenset({*twins.items(), *((b, a) for a, b in twins.items())})
        self._scored = {name: b for name, b in backends.items() if isinstance(b, Scored)}
        self._output_language = output_language
        self._fallbacks = metrics.qe_fallbacks
        self._served = metrics.qe_served

    def opinions(self, model: str, chain: Sequence[str]) -> tuple[str, ...]:
        """The gated models after `model` in `chain` (earlier ones already failed), in order, none the twin of
        one before it."""
        tried = [model]
        for m in chain[chain.index(model) + 1 :] if model in chain else chain:
            if m in self._gated and m not in tried and not any((t, m) in self._twins for t in tried):
                tried.append(m)
        return tuple(tried[1:])

    async def review(
        self, sources: Sequence[str], outputs: Sequence[str], model: str, *, chain: Sequence[str],
        pair: tuple[str, str], translate: Translate, split: bool, enabled: bool = True,
    ) -> Reviewed:
        """`enabled`: this request may take a second opinion (the degradation ladder turns that off). Each later
        engine sees, in one call, only the segments whose best candidate so far still fails a check."""
        texts, models = list(outputs), [model] * len(outputs)
        if not (enabled and self._config.enabled) or model not in self._gated:
            return Reviewed(texts, models)
        verdicts = [self.verdict(model, s, o, pair, split=split) for s, o in zip(sources, outputs, strict=True)]
        checked = [i for i, v in enumerate(verdicts) if not v.ok]
        opinions = self.opinions(model, chain) if checked else ()
        if not opinions:
            return Reviewed(texts, models)
        for i in checked:
            self._fallbacks.labels(model, verdicts[i].reasons[0]).inc()
        failing = checked
        for other in opinions:
            try:
                again = await translate(other, [sources[i] for i in failing])
            except PeakgateError as exc:  # a second opinion is best effort: the best answer so far stands
                _log.warning("quality fallback to %s failed (%s); serving the best answer so far", other, exc.message)
                break
            for i, candidate in zip(failing, again, strict=True):
                verdict = self.verdict(other, sources[i], candidate, pair, split=split)
                if prefer_fallback(verdicts[i], verdict):
                    texts[i], models[i], verdicts[i] = candidate, other, verdict
            failing = [i for i in failing if not verdicts[i].ok]
            if not failing:
                break
        for i in checked:
            self._served.labels(model, "primary" if models[i] == model else "fallback").inc()
        return Reviewed(texts, models)

    def verdict(self, model: str, source: str, output: str, pair: tuple[str, str], *, split: bool) -> Verdict:
        return assess(source, output, pair=pair, confidence=self._confidence(model, source, split),
                      output_language=self._output_language(output, pair), config=self._config)

    def _confidence(self, model: str, source: str, split: bool) -> float | None:
        """The least confident of the segment's sentences, as the scheduler split them for the engine."""
        backend = self._scored.get(model)
        if backend is None:
            return None
        sentences = (split_sentences if split else keep_whole)(source).sentences
        scores = [backend.confidence(s) for s in sentences]
        known = [s for s in scores if s is not None]
        return min(known) if known and len(known) == len(scores) else None
