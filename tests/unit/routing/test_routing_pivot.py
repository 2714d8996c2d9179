"""Pivot planning (pure) and the two-hop run: plans, reachability, deadline sharing, marking and counting."""

from __future__ import annotations

import dataclasses

import pytest

from peakgate.clock import FakeClock
from peakgate.domain import TranslateRequest, TranslateResult, Translation
from peakgate.errors import BadRequest
from peakgate.observe.metrics import Metrics
from peakgate.routing.pivot import Plan, plan, reachable, run_pivoted

# en<->es, es<->fr, es->pt-br, en<->gl: the shape of the Debian pairs.
SERVED = {("en", "es"), ("es", "en"), ("es", "fr"), ("fr", "es"), ("es", "pt-br"), ("en", "gl"), ("gl", "en")}


def direct(source: str, target: str) -> bool:
    # The router's rule: a model for "en" serves "en-us" too.
    return (source, target) in SERVED or (source, target.partition("-")[0]) in SERVED


@pytest.mark.parametrize(("source", "target", "expected"), [
    ("en", "es", Plan("en", "es")),
    ("en", "fr", Plan("en", "fr", "es")),
    ("fr", "en", Plan("fr", "en", "es")),
    ("en", "pt-br", Plan("en", "pt-br", "es")),
    ("fr", "en-us", Plan("fr", "en-us", "es")),
    ("gl", "es", Plan("gl", "es", "en")),  # Spanish is no help: gl only reaches en
    ("gl", "fr", None),  # would take three hops
    ("en", "en-us", None),  # one language: never through another
    ("en", "de", None),
])
def test_direct_first_then_the_first_pivot_with_both_hops(source: str, target: str, expected: Plan | None) -> None:
    assert plan(source, target, direct, ("es", "en")) == expected


def test_pivots_are_tried_in_order_and_can_be_switched_off() -> None:
    both = {("ca", "es"), ("es", "it"), ("ca", "en"), ("en", "it")}
    assert plan("ca", "it", lambda s, t: (s, t) in both, ("en", "es")) == Plan("ca", "it", "en")
    assert plan("ca", "it", lambda s, t: (s, t) in both, ()) is None


def test_reachable_lists_every_servable_pair_with_its_plan() -> None:
    table = reachable({"en", "gl"}, {"es", "fr", "gl", "en"}, direct, ("es", "en"))
    assert {s: {t: p.pivot for t, p in targets.items()} for s, targets in table.items()} == {
        "en": {"es": None, "fr": "es", "gl": None},
        "gl": {"en": None, "es": "en"},
    }
    assert str(table["gl"]["es"]) == "gl->en->es"


async def test_two_hops_share_the_deadline_and_the_result_is_marked_and_counted() -> None:
    clock, metrics, hops = FakeClock(), Metrics(), []

    async def hop(request: TranslateRequest) -> TranslateResult:
        hops.append(request)
        clock.advance(0.4)
        texts = tuple(Translation(f"{request.target}:{s}", request.source or "", f"m-{request.target}", "tiny")
                      for s in request.segments)
        return TranslateResult(texts, 5, "L1" if request.target == "fr" else None)

    request = TranslateRequest(("hello",), "en", "fr", tier="tiny")
    result = await run_pivoted(request, Plan("en", "fr", "es"), hop, budget_ms=1000.0, clock=clock, metrics=metrics)
    assert [(h.source, h.target, h.deadline_ms) for h in hops] == [("en", "es", 1000.0), ("es", "fr", 600.0)]
    assert hops[1].segments == ("es:hello",) and hops[1].tier == "tiny"
    assert result.translations == (Translation("fr:es:hello", "en", "m-es+m-fr", "tiny", pivot="es"),)
    assert (result.billed_characters, result.degraded) == (5, "L1")
    sample = {"source": "en", "target": "fr", "pivot": "es"}
    assert metrics.registry.get_sample_value("peakgate_pivot_total", sample) == 1.0


async def test_a_glossary_cannot_cross_a_pivot() -> None:
    async def hop(request: TranslateRequest) -> TranslateResult:
        raise AssertionError("no hop may run")

    request = dataclasses.replace(TranslateRequest(("hi",), "en", "fr"), glossary_id="g1")
    with pytest.raises(BadRequest, match="translated through es"):
        await run_pivoted(request, Plan("en", "fr", "es"), hop, budget_ms=1.0, clock=FakeClock(), metrics=Metrics())
