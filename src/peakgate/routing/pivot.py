"""Pivot translation: a pair no model serves, translated in two hops through a third language.

`plan` and `reachable` are pure: from what is served directly (a predicate over language codes, the router's
own matching) and the pivot languages to try, in order, to a plan. `run_pivoted` runs a plan's two hops
through a callback, the normal request path, so each hop is batched, cached, metered and guarded by the
breakers like any other request.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass

from peakgate.clock import Clock
from peakgate.domain import TranslateRequest, TranslateResult, Translation
from peakgate.errors import BadRequest
from peakgate.observe.metrics import Metrics

Direct = Callable[[str, str], bool]  # (source, target) -> a model serves the pair directly
Hop = Callable[[TranslateRequest], Awaitable[TranslateResult]]


@dataclass(frozen=True, slots=True)
class Plan:
    source: str
    target: str
    pivot: str | None = None  # None: one hop, a model serves the pair

    def __str__(self) -> str:
        return f"{self.source}->{self.pivot}->{self.target}" if self.pivot else f"{self.source}->{self.target}"


def _base(code: str) -> str:
    return code.lower().replace("_", "-").partition("-")[0]


def plan(source: str, target: str, direct: Direct, pivots: Sequence[str]) -> Plan | None:
    """Direct when a model serves the pair, else through the first pivot both hops exist for; None: neither.

    A source and target of one language ("en" -> "en-us") are never pivoted: a round trip through Spanish
    would only lose meaning.
    """
    if direct(source, target):
        return Plan(source, target)
    if _base(source) == _base(target):
        return None
    for pivot in pivots:
        if pivot not in (_base(source), _base(target)) and direct(source, pivot) and direct(pivot, target):
            return Plan(source, target, pivot)
    return None


def reachable(sources: Collection[str], targets: Collection[str], direct: Direct, pivots: Sequence[str]
              ) -> dict[str, dict[str, Plan]]:
    """source -> target -> plan, for every pair of the given codes that can be served (sorted by code)."""
    table: dict[str, dict[str, Plan]] = {}
    for source in sorted(sources):
        plans = {target: plan(source, target, direct, pivots) for target in sorted(targets)}
        table[source] = {target: found for target, found in plans.items() if found is not None}
    return table


def _joined(first: Translation, second: Translation, route: Plan) -> Translation:
    # The text, origin and TM score are the second hop's: what the caller receives came out of it.
    return dataclasses.replace(second, detected_source=route.source, model=f"{first.model}+{second.model}",
                               pivot=route.pivot)


async def run_pivoted(request: TranslateRequest, route: Plan, hop: Hop, *, budget_ms: float, clock: Clock,
                      metrics: Metrics) -> TranslateResult:
    """Both hops of `route`, sharing the request's deadline; counted in `peakgate_pivot_total`."""
    assert route.pivot is not None  # a one-hop plan runs as a plain request
    if request.glossary_id:
        # A glossary holds source->target terms: neither hop translates that pair, so it cannot be applied.
        raise BadRequest(f"glossaries cannot be used for {route.source}->{route.target}: no model serves it "
                         f"directly and it is translated through {route.pivot} ({route})")
    started = clock.now()
    first = await hop(dataclasses.replace(request, source=route.source, target=route.pivot, deadline_ms=budget_ms))
    left_ms = budget_ms - (clock.now() - started) * 1000.0
    second = await hop(dataclasses.replace(
        request, segments=tuple(t.text for t in first.translations), source=route.pivot, target=route.target,
        deadline_ms=max(1.0, left_ms),
    ))
    metrics.pivots.labels(source=route.source, target=route.target, pivot=route.pivot).inc()
    translations = tuple(_joined(a, b, route) for a, b in zip(first.translations, second.translations, strict=True))
    return TranslateResult(translations, first.billed_characters, first.degraded or second.degraded)
