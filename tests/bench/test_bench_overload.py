"""Smoke test for bench/overload.py on the echo engine, tiny sizes; the naive server (student model) is skipped."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import overload
from bench._common import default_dev_path, load_dev
from bench._http import TIMEOUT, OpenLoopResult, Outcome

DEV = default_dev_path()


def test_workload_follows_the_mix_and_makes_texts_distinct() -> None:
    probes = overload.workload([f"Sentence {i}." for i in range(20)], 300, seed=5)
    assert probes == overload.workload([f"Sentence {i}." for i in range(20)], 300, seed=5)
    counts = Counter(p.klass for p in probes)
    assert set(counts) == {"interactive", "document", "batch"} and counts["batch"] > counts["interactive"]
    assert all(p.segments == 1 for p in probes if p.klass == "interactive")
    assert all(5 <= p.segments <= 10 for p in probes if p.klass == "document")
    assert all(p.segments == 8 for p in probes if p.klass == "batch")
    assert all(p.timeout_s == overload.DEFAULT_DEADLINES_S[p.klass] + 0.5 for p in probes)


def test_tally_sorts_outcomes_into_accepted_rejected_and_lost() -> None:
    probes = overload.workload(["a", "b", "c"], 6, mix={"interactive": 1.0}, seed=1)
    outcomes = [
        Outcome("interactive", 200, 1, 0.0, 0.1),
        Outcome("interactive", 429, 1, 0.0, 0.01, retry_after=True),
        Outcome("interactive", 503, 1, 0.0, 0.01, retry_after=False),
        Outcome("interactive", 504, 1, 0.0, 3.0),
        Outcome("interactive", TIMEOUT, 1, 0.0, 3.5),
        Outcome("interactive", 200, 1, 0.0, 9.0),  # answered after the window: not goodput
    ]
    stats = overload.tally(OpenLoopResult(outcomes, 7, 1, 2.0, 0.0, 0.0), probes)
    s = stats.classes["interactive"]
    assert (s.offered, s.accepted, s.rejected, s.rejected_no_retry_after) == (7, 2, 1, 1)
    assert s.errors == Counter({504: 1}) and s.lost == 1 and s.not_sent == 1
    assert stats.goodput_sps == 0.5 and stats.accepted_segments_total == 2


@pytest.mark.skipif(not DEV.is_file(), reason=f"dev set {DEV} is missing")
def test_overload_bench_runs_on_the_echo_engine() -> None:
    sentences = [r.en for r in load_dev(DEV, limit=60)]
    args = overload.parser().parse_args(["--no-naive", "--load", "1.5", "--duration", "1.5", "--capacity-s", "1",
                                         "--clients", "4", "--unloaded-requests", "20", "--recovery-s", "2"])
    lines = overload.run(overload.ECHO_CONFIG, sentences, args)
    text = "\n".join(lines)
    assert "peakgate: capacity" in text and "unloaded interactive" in text and "open loop" in text
    assert "goodput / peakgate capacity" in text and "peakgate goals:" in text
    assert "recovery at 0.5x capacity" in text and "interactive recovers within its deadline" in text
    assert "naive" not in text
    (delivered,) = [line for line in lines if line.startswith("accepted segments / segments the engines ran")]
    assert 0.5 <= float(delivered.split()[-1]) <= 1.0  # from the server's own batch counts; nothing coalesces


def test_recovery_is_the_first_second_that_every_later_second_keeps_at_99_percent() -> None:
    from bench.recovery import recovered_after_s, recovery

    def at(second: float, status: int, klass: str = "interactive") -> Outcome:
        return Outcome(klass, status, 1, 100.0 + second, 100.0 + second + 0.01)

    outcomes = [at(0.1, 503), at(0.5, 200), at(1.2, 200), at(1.7, 429), at(2.5, 200), at(3.1, 200), at(3.9, 200)]
    assert recovered_after_s(outcomes, 100.0) == 2.0  # second 1 still refused one of two
    assert recovered_after_s([*outcomes, at(4.5, 504)], 100.0) is None  # failing at the end: not recovered
    assert recovered_after_s([], 100.0) is None
    rows = recovery(OpenLoopResult([*outcomes, at(0.2, 200, "batch")], 8, 0, 5.0, 100.0, 0.0), ["interactive", "batch"])
    assert [(r.klass, r.offered, r.recovered_s) for r in rows] == [
        ("interactive", 7, 2.0), ("batch", 1, 0.0), ("all", 8, 2.0)]
