"""Coverage: the served pairs (direct and pivoted) as listed, planned and checked, and the source chosen (or
refused by name) for a request without one."""

from __future__ import annotations

import pytest

from peakgate.api.contract import Language
from peakgate.config import ModelConfig, Settings
from peakgate.domain import TranslateRequest
from peakgate.errors import UnsupportedPair, UnsupportedSource
from peakgate.routing.languages import Coverage, language_name
from peakgate.routing.pivot import Plan

PAIRS = (("en", "es"), ("es", "en"), ("es", "fr"), ("fr", "es"), ("es", "pt-br"), ("en", "gl"), ("gl", "en"))


def settings(**kw: object) -> Settings:
    models = tuple(ModelConfig(name=f"m-{s}-{t}", engine="echo", source=s, target=t) for s, t in PAIRS)
    return Settings.model_validate({"models": models} | kw)


class Ranked:
    """A detector that answers what the test says."""

    def __init__(self, *ranked: tuple[str, float]) -> None:
        self.ranked = list(ranked)

    def detect(self, text: str) -> list[tuple[str, float]]:
        return self.ranked

    def warm(self) -> None:
        pass


def coverage(*ranked: tuple[str, float], **kw: object) -> Coverage:
    return Coverage(settings(**kw), Ranked(*ranked))


def test_languages_list_every_pair_served_directly_or_through_a_pivot() -> None:
    assert coverage().languages() == [
        Language("en", "English", ("es", "fr", "gl", "pt-br")),
        Language("es", "Spanish", ("en", "fr", "gl", "pt-br")),
        Language("fr", "French", ("en", "es", "pt-br")),
        Language("gl", "Galician", ("en", "es")),
    ]
    assert coverage(pivot={"enabled": False}).languages()[0] == Language("en", "English", ("es", "gl"))


def test_only_models_in_a_tier_count() -> None:
    tiered = Coverage(settings(tiers={"tiny": ("m-en-es", "m-es-en")}, default_tier="tiny"), Ranked())
    assert [(lang.code, lang.targets) for lang in tiered.languages()] == [("en", ("es",)), ("es", ("en",))]


def test_plans_and_checks() -> None:
    cov = coverage()
    assert cov.plan("en", "fr") == Plan("en", "fr", "es")
    assert cov.plan("fr", "en-gb") == Plan("fr", "en-gb", "es")  # a model for "en" serves "en-gb"
    assert cov.plan("en", "es") == Plan("en", "es")
    cov.check("en", "fr")
    cov.check(None, "pt-br")
    with pytest.raises(UnsupportedPair, match=r"en->de.*through a pivot language \(es, en\).*en->es->fr"):
        cov.check("en", "de")
    with pytest.raises(UnsupportedPair, match="no model translates into de; served targets: en, es, fr, gl"):
        cov.check(None, "de")


@pytest.mark.parametrize(("source", "target", "model", "sent"), [
    ("es", "en-gb", None, "en"),  # engines check the exact pair: a model for "en" is sent "en"
    ("es", "pt-br", None, "pt-br"),  # a model declares the region: kept
    ("en", "es", None, "es"),
    ("es", "en-us", "m-es-en", "en"),  # an explicit model's own target
    ("en", "de", None, "de"),  # nothing serves it: left for the router to refuse
])
def test_the_target_sent_to_the_engines(source: str, target: str, model: str | None, sent: str) -> None:
    request = TranslateRequest(("x",), source, target, model=model)
    assert coverage().for_engines(request).target == sent


@pytest.mark.parametrize(("ranked", "target", "source"), [
    ((("es", 0.9), ("en", 0.1)), "en", "es"),
    ((("fr", 0.9),), "en", "fr"),  # served through the pivot
    ((("de", 0.3), ("en", 0.2)), "es", "en"),  # unserved but unsure: the best served one wins
    ((), "es", "en"),  # no cue at all: English
    ((), "en", "es"),  # ... unless English cannot reach the target
])
def test_the_detected_source_among_those_reaching_the_target(
    ranked: tuple[tuple[str, float], ...], target: str, source: str
) -> None:
    assert coverage(*ranked).source_of("text", target) == source


def test_an_unserved_language_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedSource, match=r"^detected source language German \(de, confidence 0.93\) is not "
                                                r"served; served sources: en, es, fr, gl$"):
        coverage(("de", 0.93), ("en", 0.05)).source_of("Das ist scharf!", "es")


def test_a_served_language_that_cannot_reach_the_target_is_refused_by_name() -> None:
    with pytest.raises(UnsupportedSource, match=r"Galician \(gl, confidence 0.80\) cannot be translated into fr; "
                                                r"sources served into fr: "):
        coverage(("gl", 0.8), ("pt", 0.1)).source_of("A casa", "fr")


def test_text_already_in_the_target_language_is_its_own_source() -> None:
    assert coverage(("es", 0.8), ("fr", 0.1)).source_of("La casa", "es") == "es"  # the service echoes it


def test_the_real_detector_refuses_german() -> None:
    with pytest.raises(UnsupportedSource, match=r"German \(de, confidence 0\.\d\d\) is not served"):
        Coverage(settings()).source_of("Das ist scharf!", "es")


@pytest.mark.parametrize(("code", "name"), [("de", "German"), ("gl", "Galician"), ("pt-br", "Portuguese (Brazilian)"),
                                            ("en-us", "English (American)"), ("xx", "xx")])
def test_language_names(code: str, name: str) -> None:
    assert language_name(code) == name
