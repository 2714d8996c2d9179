"""The summary's arithmetic: every arrival counted once, percentiles, goodput, refusals, the server's deltas."""

from __future__ import annotations

from peakgate.drills.profile import Phases, SurgeProfile
from peakgate.drills.records import CANCELLED, DROPPED, TIMEOUT, FollowUps, Record, RunResult
from peakgate.drills.scrape import Sample, parse
from peakgate.drills.summary import figures, percentile, summarize

PROFILE = SurgeProfile(baseline_rps=10, multiplier=2, phases=Phases(baseline_s=2, ramp_s=0, hold_s=2, decay_s=0))


def _record(i: int, status: int, latency: float | None = 0.1, *, kind: str = "short", retry: bool = False,
            phase: str = "baseline") -> Record:
    klass = {"document": "document", "batch": "batch"}.get(kind, "interactive")
    return Record(i, kind, klass, "t", phase, i * 0.1, 1, status, latency, retry_after=retry)


def _result(records: list[Record], samples: list[Sample] | None = None, followups: FollowUps | None = None
            ) -> RunResult:
    return RunResult("http://t:1", "p", 0, "2026-12-05T00:00:00+00:00", 4.0, 1.0, 5.0, 0.01, records,
                     followups or FollowUps(), samples or [], 0)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (percentile(values, 0.5), percentile(values, 0.99), percentile(values, 1.0)) == (50.0, 99.0, 100.0)
    assert percentile([], 0.5) is None and percentile([3.0], 0.99) == 3.0


def test_every_arrival_lands_in_exactly_one_bucket() -> None:
    records = [_record(0, 200, 0.2), _record(1, 200, 5.0), _record(2, 429, retry=True), _record(3, 503, retry=True),
               _record(4, TIMEOUT, 15.0), _record(5, 504), _record(6, CANCELLED, None), _record(7, DROPPED, None)]
    f = figures(records, deadline_s=3.0, seconds=4.0)
    assert (f["offered"], f["accepted"], f["shed_429"], f["shed_503"], f["errors"], f["generator_dropped"]) == (
        8, 2, 1, 1, 3, 1)
    assert f["errors_by_outcome"] == {"timeout": 1, "504": 1, "cancelled at drain": 1}
    assert (f["goodput"], f["goodput_rps"], f["goodput_share"], f["shed_rate"]) == (1, 0.25, 1 / 8, 2 / 8)
    assert (f["p50_s"], f["p99_s"]) == (0.2, 5.0)


def test_refusals_count_polls_and_missing_hints() -> None:
    records = [_record(0, 429, retry=True), _record(1, 503, retry=False)]
    summary = summarize(_result(records, followups=FollowUps(polls=9, refusals=2, refusals_with_retry_after=2)),
                        PROFILE)
    assert summary["refusals"] == {"total": 4, "with_retry_after": 3, "without_retry_after": 1,
                                        "poll_refusals": 2, "polls": 9, "poll_errors": 0}
    assert not summary["checks"]["all_refusals_had_retry_after"]


def test_phases_kinds_classes_and_the_timeline() -> None:
    records = [_record(i, 200, 0.1 * (i + 1), phase="baseline") for i in range(10)]
    records += [_record(10 + i, 429, retry=True, phase="hold", kind="batch") for i in range(5)]
    for r in records[10:]:
        r.at_s = 2.5
    summary = summarize(_result(records), PROFILE)
    assert summary["checks"]["counts_add_up"]
    assert set(summary["phases"]) == {"baseline", "hold"}  # zero-length phases are left out
    assert summary["phases"]["hold"]["shed_rate"] == 1.0 and summary["phases"]["hold"]["expected_offered"] == 40
    assert summary["classes"]["batch"]["shed"] == 5 and summary["kinds"]["short"]["accepted"] == 10
    line = summary["timeline"]
    assert line["offered"] == [10, 0, 5, 0] and line["shed"] == [0, 0, 5, 0]
    assert line["profile_rps"] == [10, 10, 20, 20]


def test_server_figures_are_differences_between_the_first_and_last_scrape() -> None:
    def sample(t: float, engine: int, cache: int, shed: int, level: int) -> Sample:
        return parse(f'peakgate_segments_served_total{{origin="engine"}} {engine}\n'
                     f'peakgate_segments_served_total{{origin="cache"}} {cache}\n'
                     f'peakgate_rejected_total{{reason="shed",priority="batch"}} {shed}\n'
                     f"peakgate_degradation_level {level}\n", t)

    samples = [sample(0, 100, 50, 3, 0), sample(1, 160, 90, 10, 2), sample(2, 200, 100, 13, 1)]
    server = summarize(_result([], samples=samples), PROFILE)["server"]
    assert server["segments_served"] == 150 and server["hit_rate"] == 50 / 150
    assert server["rejected_by_reason"] == {"shed": 10} and server["max_degradation"] == 2
    assert server["workers"] is None
    series = summarize(_result([], samples=samples), PROFILE)["timeline"]["server"]
    assert series["hit_rate"] == [None, 40 / 100, 10 / 50]
