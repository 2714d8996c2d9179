from __future__ import annotations

from peakgate.drills import drill_promises as dp
from peakgate.drills.faults import FaultEvent
from peakgate.drills.records import DROPPED, Record
from peakgate.drills.scrape import Sample


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


def test_recovery_is_the_first_window_served_again_after_the_fault() -> None:
    slow = [_rec(i, 10 + i * 0.1, 200, latency_s=5.0) for i in range(20)]  # 10-12 s: answered past the deadline
    shed = [_rec(100 + i, 12 + i * 0.1, 503, retry_after=True) for i in range(20)]  # 12-14 s: refused
    fine = [_rec(200 + i, 14 + i * 0.1, 200, latency_s=0.1) for i in range(20)]  # 14-16 s: served
    records = slow + shed + fine
    assert dp.recovery_at(records, 10.0, deadline_s=3.0) == 14.0
    assert dp.recovery_at(records, 10.0, deadline_s=6.0) == 10.0  # slow answers within a looser deadline count
    assert dp.recovery_at(slow + shed, 10.0, deadline_s=3.0) is None
    assert dp.recovery_at(records, 17.0, deadline_s=3.0) is None  # nothing arrived after


def _event(fault: str, target: int | None, replaced_after_s: float | None = None) -> FaultEvent:
    kind = "kill-pipeline" if fault.startswith("kill") else "stall-pipeline"
    return FaultEvent(fault, kind, 5.0, 5.0, target, None if replaced_after_s is None else 99, replaced_after_s,
                      "outcome")


def test_fault_promises() -> None:
    assert dp.faults_injected([_event("kill-pipeline@5s", 11)]).passed
    missed = dp.faults_injected([_event("kill-pipeline@5s", 11), _event("stall-pipeline@5s:1s", None)])
    assert not missed.passed and "stall-pipeline@5s:1s" in missed.detail
    assert dp.killed_pipelines_replaced([_event("kill-pipeline@5s", 11, 0.5)], 10.0).passed
    assert not dp.killed_pipelines_replaced([_event("kill-pipeline@5s", 11, 12.0)], 10.0).passed
    assert not dp.killed_pipelines_replaced([_event("kill-pipeline@5s", 11)], 10.0).passed  # never replaced
    assert dp.killed_pipelines_replaced([_event("stall-pipeline@5s:1s", 11)], 10.0).passed  # no kill to check


UP = "upstream-en-es"


def _scrape(t_s: float, state: str | None, opens: float) -> Sample:
    return Sample(t_s, breakers={UP: state} if state else {}, breaker_opens={UP: opens} if opens else {})


def test_breaker_that_opened_in_the_fault_and_closed_after_it_passes() -> None:
    # Fault from 4 s to 9 s; the breaker had never moved before it, opened twice (a failed half-open probe).
    samples = [_scrape(3, None, 0), _scrape(5, "open", 1), _scrape(8, "open", 2), _scrape(9.5, "open", 2),
               _scrape(11, "closed", 2), _scrape(14, "closed", 2)]
    promise = dp.breaker_cycled(samples, UP, 4.0, 9.0)
    assert promise.passed, promise.detail
    assert promise.detail == "opened 2 time(s) from 5.0 s; closed again by 11.0 s, 2.0 s after the fault ended"


def test_breaker_that_never_opened_fails() -> None:
    samples = [_scrape(3, None, 0), _scrape(6, None, 0), _scrape(12, None, 0)]
    assert not dp.breaker_cycled(samples, UP, 4.0, 9.0).passed


def test_opens_before_the_fault_do_not_count() -> None:
    # It opened once at 1 s (something else) and was closed before and through the fault.
    samples = [_scrape(1, "open", 1), _scrape(3, "closed", 1), _scrape(6, "closed", 1), _scrape(12, "closed", 1)]
    assert "never opened" in dp.breaker_cycled(samples, UP, 4.0, 9.0).detail


def test_breaker_still_open_at_the_end_fails() -> None:
    samples = [_scrape(3, None, 0), _scrape(5, "open", 1), _scrape(11, "half_open", 1), _scrape(14, "open", 2)]
    promise = dp.breaker_cycled(samples, UP, 4.0, 9.0)
    assert not promise.passed and "still open at the last scrape (14.0 s)" in promise.detail


def test_fault_window_requests_served_or_refused_with_retry_after() -> None:
    ok = [_rec(0, 3, 500), _rec(1, 5, 200), _rec(2, 6, 503, retry_after=True), _rec(3, 7, DROPPED)]
    promise = dp.answered_during(ok, 4.0, 9.0)
    assert promise.passed and promise.detail == "2 arrivals: 1 served, 1 refused with Retry-After, 0 failed"
    assert not dp.answered_during([*ok, _rec(4, 8, 503)], 4.0, 9.0).passed  # no Retry-After
    assert not dp.answered_during([*ok, _rec(5, 8, 502)], 4.0, 9.0).passed
    assert not dp.answered_during([_rec(0, 3, 200)], 4.0, 9.0).passed  # no arrival in the window proves nothing


def test_upstream_promises_only_for_a_fail_upstream_fault_that_hit() -> None:
    hit = FaultEvent("fail-upstream@4s:5s", "fail-upstream", 4.0, 9.0, 50)
    missed = FaultEvent("fail-upstream@4s:5s", "fail-upstream", 4.0, 4.0, None)
    kill = FaultEvent("kill-pipeline@2s", "kill-pipeline", 2.0, 2.0, 11)
    records, samples = [_rec(1, 5, 200)], [_scrape(5, "open", 1), _scrape(10, "closed", 1)]
    names = [p.name for p in dp.upstream_promises([kill, hit, missed], records, samples, UP)]
    assert len(names) == 2 and "served by a fallback" in names[0] and UP in names[1]
