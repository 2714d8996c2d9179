from __future__ import annotations

from peakgate.drills import drill_promises as dp
from peakgate.drills.records import Record


def _rec(index: int, at_s: float, status: int, *, latency_s: float = 0.1, retry_after: bool = False,
         job: str | None = None) -> Record:
    return Record(index=index, kind="translate", klass="interactive", tenant="t", phase="p", at_s=at_s, segments=1,
                  status=status, latency_s=latency_s, retry_after=retry_after, job=job)


def test_refusal_without_retry_after_fails() -> None:
    assert dp.refusals_have_retry_after([_rec(0, 1, 429, retry_after=True)]).passed
    assert not dp.refusals_have_retry_after([_rec(0, 1, 503)]).passed


def test_500_fails_but_503_does_not() -> None:
    assert dp.no_server_errors([_rec(0, 1, 503, retry_after=True), _rec(1, 1, 200)]).passed
    assert not dp.no_server_errors([_rec(0, 1, 500)]).passed


def test_lost_jobs_fail_pending_ones_do_not() -> None:
    assert dp.accepted_jobs_not_lost([_rec(0, 1, 202, job="done"), _rec(1, 1, 202, job="pending")]).passed
    assert not dp.accepted_jobs_not_lost([_rec(0, 1, 202, job="error")]).passed


def test_phases_split_at_fault_and_recovery() -> None:
    records = [_rec(0, 1, 200, latency_s=0.1), _rec(1, 5, 503, retry_after=True), _rec(2, 9, 200, latency_s=0.2)]
    before, during, after = dp.figures(records, fault_at_s=4, recovered_at_s=8)
    assert (before.availability, during.availability, after.availability) == (1.0, 0.0, 1.0)
    assert after.p99_s == 0.2
    assert dp.after_p99_within([before, during, after], 0.5).passed
    assert not dp.after_p99_within([before, during, after], 0.1).passed


def test_recovery_bound() -> None:
    assert dp.recovered(8, 4, 10).passed
    assert not dp.recovered(30, 4, 10).passed
    assert not dp.recovered(None, 4, 10).passed
