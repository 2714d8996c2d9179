"""The drill's reading of the gateway's /metrics: breaker state and opens per model, from the real metric names."""

from __future__ import annotations

from peakgate.drills.scrape import parse
from peakgate.observe.metrics import Metrics


def test_breaker_state_and_opens_are_read_per_model() -> None:
    metrics = Metrics()
    for to in ("open", "half_open", "open", "half_open", "closed"):
        metrics.breaker_transitions.labels("upstream-en-es", to).inc()
    metrics.breaker_state.labels("upstream-en-es").set(0)
    metrics.breaker_state.labels("apertium-en-es").set(2)
    metrics.breaker_transitions.labels("apertium-en-es", "open").inc()
    sample = parse(metrics.render().decode(), 7.0)
    assert sample.breakers == {"upstream-en-es": "closed", "apertium-en-es": "open"}
    assert sample.breaker_opens == {"upstream-en-es": 2.0, "apertium-en-es": 1.0}


def test_a_breaker_that_never_moved_has_no_entry() -> None:
    sample = parse(Metrics().render().decode(), 1.0)
    assert sample.breakers == {} and sample.breaker_opens == {}
