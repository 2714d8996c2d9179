"""QualityGate on fakes: which engine gives the second opinion, which candidate is served, what is counted."""

from __future__ import annotations

from collections.abc import Mapping

import pytest

from peakgate.config import ModelConfig
from peakgate.errors import Unavailable
from peakgate.observe.metrics import Metrics
from peakgate.quality.fallback import QualityGate
from peakgate.quality.settings import QualityConfig

PAIR = ("en", "es")
FP32, INT8, RULES, ECHO, LARGE = "student-fp32", "student-int8", "rules", "echo", "large-int8"
MODELS = (
    ModelConfig(name=LARGE, engine="ctranslate2", source="en", target="es", path="l"),
    ModelConfig(name=FP32, engine="ctranslate2", source="en", target="es", path="s", compute_type="float32"),
    ModelConfig(name=INT8, engine="ctranslate2", source="en", target="es", path="s"),
    ModelConfig(name=RULES, engine="apertium", source="en", target="es", mode="eng-spa"),
    ModelConfig(name=ECHO, engine="echo", source="en", target="es"),
)


class Scores:
    """A backend that remembers confidences (the CTranslate2Backend side of the gate)."""

    def __init__(self, scores: Mapping[str, float]) -> None:
        self._scores = dict(scores)

    def confidence(self, text: str) -> float | None:
        return self._scores.get(text)


class Engine:
    """The second engine: a fixed table, and every call recorded."""

    def __init__(self, table: Mapping[str, str], error: Exception | None = None) -> None:
        self.table = dict(table)
        self.error = error
        self.calls: list[tuple[str, list[str]]] = []

    async def __call__(self, model: str, texts: list[str]) -> list[str]:
        self.calls.append((model, texts))
        if self.error is not None:
            raise self.error
        return [self.table[t] for t in texts]


def gate(scores: Mapping[str, float] | None = None, config: QualityConfig | None = None,
         metrics: Metrics | None = None) -> QualityGate:
    backends = {INT8: Scores(scores or {}), FP32: Scores(scores or {}), RULES: object()}
    return QualityGate(config or QualityConfig(), MODELS, metrics or Metrics(), backends, lambda _text, _pair: None)


def count(metrics: Metrics, name: str, **labels: str) -> float:
    return metrics.registry.get_sample_value(name, labels) or 0.0


@pytest.mark.parametrize(("model", "chain", "expected"), [
    (INT8, (INT8, RULES), (RULES,)),  # medium
    (FP32, (FP32, INT8, RULES), (RULES,)),  # the int8 twin shares the weights, and the mistakes
    (LARGE, (LARGE, INT8, RULES), (INT8, RULES)),  # large: another student, then the rules
    (LARGE, (LARGE, FP32, INT8, RULES), (FP32, RULES)),  # never the twin of an engine already asked
    (RULES, (RULES, INT8), (INT8,)),  # tiny
    (RULES, (INT8, RULES), ()),  # the student failed over to the rules already: nothing after them
    (INT8, (INT8, ECHO), ()),  # echo is no translation
])
def test_the_opinions_are_the_later_gated_models_that_are_not_twins(
    model: str, chain: tuple[str, ...], expected: tuple[str, ...]
) -> None:
    assert gate().opinions(model, chain) == expected


async def test_a_segment_failing_the_second_opinion_too_goes_on_down_the_chain() -> None:
    metrics = Metrics()
    tables = {INT8: {"Hello": "Hello", "Good morning": "Buenos días"}, RULES: {"Hello": "Hola"}}
    calls: list[tuple[str, list[str]]] = []

    async def engines(model: str, texts: list[str]) -> list[str]:
        calls.append((model, texts))
        return [tables[model][t] for t in texts]

    reviewed = await gate(metrics=metrics).review(
        ["Hello", "Good morning", "Open the file"], ["Hello", "Good morning", "Abrir el fichero"], LARGE,
        chain=(LARGE, INT8, RULES), pair=PAIR, translate=engines, split=True)
    # The second student echoes "Hello" too, so only that one goes on to the rules.
    assert calls == [(INT8, ["Hello", "Good morning"]), (RULES, ["Hello"])]
    assert reviewed.texts == ["Hola", "Buenos días", "Abrir el fichero"]
    assert reviewed.models == [RULES, INT8, LARGE]
    assert count(metrics, "peakgate_qe_served_total", model=LARGE, candidate="fallback") == 2


async def test_failing_segments_are_retranslated_and_the_better_candidate_served() -> None:
    metrics = Metrics()
    engine = Engine({"Hello": "Hola", "Save": "Salva"})
    scores = {"Hello": -0.1, "Open the file": -0.3, "Save": -2.0}
    reviewed = await gate(scores, metrics=metrics).review(
        ["Hello", "Open the file", "Save"], ["Hello", "Abrir el fichero", "Guardar"], INT8,
        chain=(INT8, RULES), pair=PAIR, translate=engine, split=True)
    assert reviewed.texts == ["Hola", "Abrir el fichero", "Salva"]
    assert reviewed.models == [RULES, INT8, RULES]
    assert engine.calls == [(RULES, ["Hello", "Save"])]  # only the failing ones, in one call
    assert count(metrics, "peakgate_qe_fallbacks_total", model=INT8, reason="identity") == 1
    assert count(metrics, "peakgate_qe_fallbacks_total", model=INT8, reason="low_confidence") == 1
    assert count(metrics, "peakgate_qe_served_total", model=INT8, candidate="fallback") == 2


async def test_a_candidate_no_better_leaves_the_primary_served() -> None:
    metrics = Metrics()
    engine = Engine({"Hello": "Hello"})
    reviewed = await gate(metrics=metrics).review(["Hello"], ["Hello"], INT8, chain=(INT8, RULES), pair=PAIR,
                                                  translate=engine, split=True)
    assert (reviewed.texts, reviewed.models) == (["Hello"], [INT8])
    assert count(metrics, "peakgate_qe_served_total", model=INT8, candidate="primary") == 1


async def test_a_failing_second_engine_leaves_the_first_answer_standing() -> None:
    metrics = Metrics()
    engine = Engine({}, error=Unavailable("rules are down"))
    reviewed = await gate(metrics=metrics).review(["Hello", "Open"], ["Hello", "Abrir"], INT8, chain=(INT8, RULES),
                                                  pair=PAIR, translate=engine, split=True)
    assert (reviewed.texts, reviewed.models) == (["Hello", "Abrir"], [INT8, INT8])
    assert count(metrics, "peakgate_qe_served_total", model=INT8, candidate="primary") == 1


@pytest.mark.parametrize(("model", "config", "enabled"), [
    (ECHO, QualityConfig(), True), (INT8, QualityConfig(enabled=False), True), (INT8, QualityConfig(), False),
])
async def test_nothing_is_checked_when_off_or_for_an_ungated_engine(
    model: str, config: QualityConfig, enabled: bool
) -> None:
    engine = Engine({"Hello": "Hola"})
    reviewed = await gate(config=config).review(["Hello"], ["Hello"], model, chain=(model, RULES), pair=PAIR,
                                                translate=engine, split=True, enabled=enabled)
    assert (reviewed.texts, reviewed.models, engine.calls) == (["Hello"], [model], [])


def test_a_segments_confidence_is_its_least_confident_sentence_as_the_scheduler_split_it() -> None:
    g = gate({"First one.": -0.1, "Second one.": -2.0})
    segment, output = "First one. Second one.", "Primero. Segundo."
    assert g.verdict(INT8, segment, output, PAIR, split=True).reasons == ("low_confidence",)
    assert g.verdict(INT8, segment, output, PAIR, split=False).confidence is None  # no score for the whole
    assert g.verdict(INT8, "First one. Third one.", output, PAIR, split=True).confidence is None
    assert g.verdict(RULES, "First one.", "Primero.", PAIR, split=True).confidence is None  # no scores kept
