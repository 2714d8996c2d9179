"""The target's own view during a surge, read from its /metrics once a second.

Counters are kept as read (cumulative); the summary takes differences between samples. A series the target does
not export (an in-process gateway has no `peakgate_queue_workers_ready`) stays None, and the report says so
rather than drawing zeros.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prometheus_client.parser import text_string_to_metric_families

HIT_ORIGINS = frozenset({"cache", "tm_exact", "tm_repaired"})  # segments no engine had to translate
_WANTED = ("peakgate_degradation_level", "peakgate_queue_length", "peakgate_queue_workers_ready",
           "peakgate_segments_served", "peakgate_rejected", "peakgate_breaker_state", "peakgate_breaker_transitions")
OPEN = "open"  # the breaker transitions' `to` label, and its state gauge's value
BREAKER_STATES = {0.0: "closed", 1.0: "half_open", 2.0: OPEN}


@dataclass(frozen=True, slots=True)
class Sample:
    t_s: float  # seconds from the run's start
    degradation: float | None = None
    queue: float | None = None  # segments waiting, all models
    workers: float | None = None  # ready workers (the best-served model's count), scale-out only
    hits: float | None = None  # cumulative segments served without an engine
    served: float | None = None  # cumulative segments served, every origin
    rejected: dict[str, float] = field(default_factory=dict)  # cumulative refusals by reason
    # Per model, once its breaker has moved (the gauge has no series before): its state, and the cumulative
    # number of times it opened (a breaker open for less than a scrape interval shows only there).
    breakers: dict[str, str] = field(default_factory=dict)
    breaker_opens: dict[str, float] = field(default_factory=dict)


def parse(text: str, t_s: float) -> Sample:
    """A Sample from Prometheus text; raises ValueError on text the parser rejects."""
    degradation = queue = workers = hits = served = None
    rejected: dict[str, float] = {}
    breakers: dict[str, str] = {}
    opens: dict[str, float] = {}
    for family in text_string_to_metric_families(_wanted_lines(text)):
        for s in family.samples:
            if s.name == "peakgate_degradation_level":
                degradation = s.value
            elif s.name == "peakgate_queue_length":
                queue = (queue or 0.0) + s.value
            elif s.name == "peakgate_queue_workers_ready":
                workers = max(workers or 0.0, s.value)
            elif s.name == "peakgate_segments_served_total":
                served = (served or 0.0) + s.value
                if s.labels.get("origin") in HIT_ORIGINS:
                    hits = (hits or 0.0) + s.value
            elif s.name == "peakgate_rejected_total":
                reason = s.labels.get("reason", "")
                rejected[reason] = rejected.get(reason, 0.0) + s.value
            elif s.name == "peakgate_breaker_state":
                breakers[s.labels.get("model", "")] = BREAKER_STATES.get(s.value, str(s.value))
            elif s.name == "peakgate_breaker_transitions_total" and s.labels.get("to") == OPEN:
                opens[s.labels.get("model", "")] = s.value
    if served is not None and hits is None:
        hits = 0.0  # nothing served from reuse yet: the origin's label has no sample
    return Sample(t_s, degradation, queue, workers, hits, served, rejected, breakers, opens)


def _wanted_lines(text: str) -> str:
    """Only the families read here: a gateway's page is ~140 KB, mostly histogram buckets, and parsing all of
    it took ~120 ms a second on the generator's event loop, which delayed sends behind their schedule."""
    keep = []
    for line in text.splitlines():
        name = line.split(maxsplit=3)[2] if line.startswith("# ") and line.count(" ") >= 2 else line
        if name.startswith(_WANTED):
            keep.append(line)
    return "\n".join(keep) + "\n"
