"""Priority shedding: batch first, then document, interactive only past its deadline; Retry-After tracks backlog."""

from __future__ import annotations

import pytest

from peakgate.config import PriorityClass
from peakgate.errors import Overloaded, RateLimited
from peakgate.resilience.settings import SheddingConfig
from peakgate.resilience.shedding import ClassLoad, ShedContext, decide, predicted_wait_ms, retry_after_s

CFG = SheddingConfig()
BUDGETS: dict[PriorityClass, tuple[float, float]] = {  # (max_queue_wait_ms, deadline_ms)
    "interactive": (500.0, 3_000.0),
    "document": (10_000.0, 30_000.0),
    "batch": (120_000.0, 300_000.0),
}


def _ctx(
    cls: PriorityClass,
    depths: dict[PriorityClass, int],
    *,
    drain_per_s: float = 100.0,
    service_time_ms: float = 50.0,
    client_share: float = 0.0,
) -> ShedContext:
    classes = {
        name: ClassLoad(depths.get(name, 0), 0.0, 0.0, budget, deadline) for name, (budget, deadline) in BUDGETS.items()
    }
    return ShedContext(cls, service_time_ms, classes, drain_per_s, CFG, client_share)


def _shed_classes(depths: dict[PriorityClass, int]) -> set[str]:
    return {c for c in BUDGETS if decide(_ctx(c, depths)).shed}


def test_idle_service_admits_everyone() -> None:
    assert _shed_classes({}) == set()


def test_shedding_order_as_interactive_backlog_grows() -> None:
    # At 100 req/s, N interactive requests queued mean N * 10 ms of interactive wait.
    assert _shed_classes({"interactive": 20}) == set()  # 200 ms: 40% of 500
    assert _shed_classes({"interactive": 25}) == {"batch"}  # 250 ms: 50%
    assert _shed_classes({"interactive": 40}) == {"batch", "document"}  # 400 ms: 80%
    assert _shed_classes({"interactive": 295}) == {"batch", "document"}  # 2950 + 50 ms: at the deadline
    assert _shed_classes({"interactive": 296}) == {"batch", "document", "interactive"}


def test_lower_class_shed_on_its_own_budget() -> None:
    # 12,001 batch requests ahead of a new batch request: 120.01 s > 120 s budget.
    assert _shed_classes({"batch": 12_001}) == {"batch"}
    assert _shed_classes({"batch": 11_000}) == set()
    assert _shed_classes({"document": 1_001}) == {"batch", "document"}  # 10.01 s > document's 10 s


def test_observed_wait_counts_when_queue_math_is_optimistic() -> None:
    ctx = _ctx("batch", {})
    loads = dict(ctx.classes)
    loads["interactive"] = ClassLoad(
        0, oldest_wait_ms=300.0, ewma_wait_ms=100.0, max_queue_wait_ms=500, deadline_ms=3e3
    )
    ctx = ShedContext("batch", 50.0, loads, 100.0, CFG)
    assert predicted_wait_ms(ctx, "interactive") == 300.0
    assert decide(ctx).shed


def test_no_drain_rate_yet_judges_by_the_observed_waits() -> None:
    # Cold start: work in flight but nothing completed yet is no reason to shed...
    assert not decide(_ctx("batch", {"interactive": 40, "batch": 5}, drain_per_s=0.0)).shed
    # ...a stuck engine is: its oldest request's wait keeps growing past the budgets.
    ctx = _ctx("batch", {"interactive": 40}, drain_per_s=0.0)
    stuck = dict(ctx.classes)
    stuck["interactive"] = ClassLoad(40, oldest_wait_ms=2_000.0, ewma_wait_ms=0.0, max_queue_wait_ms=500,
                                     deadline_ms=3e3)
    decision = decide(ShedContext("batch", 50.0, stuck, 0.0, CFG))
    assert decision.shed
    assert decision.retry_after_s is not None and decision.retry_after_s >= CFG.min_retry_after_s


def test_retry_after_is_monotone_in_backlog_and_never_zero() -> None:
    previous = 0.0
    for depth in (25, 30, 50, 100, 200, 400, 1_000, 10_000, 100_000):
        decision = decide(_ctx("batch", {"interactive": depth}))
        assert decision.shed
        assert decision.retry_after_s is not None
        assert decision.retry_after_s >= max(previous, CFG.min_retry_after_s)
        previous = decision.retry_after_s
    assert previous == CFG.max_retry_after_s
    assert retry_after_s(_ctx("batch", {})) == CFG.min_retry_after_s


def test_retry_after_is_the_drain_time_of_the_work_ahead() -> None:
    decision = decide(_ctx("document", {"interactive": 100, "document": 400, "batch": 5_000}))
    assert decision.shed
    assert decision.retry_after_s == pytest.approx(5.0)  # 500 ahead at 100/s; batch is behind it


def test_status_429_for_the_client_that_fills_the_queue() -> None:
    service = decide(_ctx("batch", {"interactive": 50}, client_share=0.1))
    client = decide(_ctx("batch", {"interactive": 50}, client_share=0.6))
    assert (service.status, client.status) == (503, 429)
    assert isinstance(service.error(), Overloaded)
    err = client.error()
    assert isinstance(err, RateLimited)
    assert err.retry_after_s == client.retry_after_s


def test_admitted_decision_carries_the_prediction() -> None:
    decision = decide(_ctx("interactive", {"interactive": 10}))
    assert not decision.shed
    assert decision.status is None
    assert decision.retry_after_s is None
    assert decision.predicted_wait_ms == pytest.approx(100.0)


def test_a_class_is_never_admitted_while_a_more_critical_one_is_shed() -> None:
    order = ["interactive", "document", "batch"]
    for interactive in (0, 10, 30, 60, 300, 1_000):
        for document in (0, 500, 1_001, 5_000):
            for batch in (0, 6_000, 12_001, 40_000):
                shed = _shed_classes({"interactive": interactive, "document": document, "batch": batch})
                ranks = sorted(order.index(c) for c in shed)
                assert ranks == list(range(3 - len(shed), 3)), (interactive, document, batch, shed)


def test_retry_after_uses_the_observed_wait_when_queues_look_empty() -> None:
    ctx = _ctx("batch", {})
    loads = dict(ctx.classes)
    loads["batch"] = ClassLoad(
        0, oldest_wait_ms=0.0, ewma_wait_ms=130_000.0, max_queue_wait_ms=120_000, deadline_ms=3e5
    )
    decision = decide(ShedContext("batch", 50.0, loads, 100.0, CFG))
    assert decision.shed
    assert decision.retry_after_s == pytest.approx(130.0)


def test_a_lower_class_drains_at_what_more_critical_arrivals_leave() -> None:
    # 11,000 batch segments ahead at 100/s: 110 s, inside the 120 s budget, until interactive work arrives at
    # 50/s: then batch drains at 50/s (220 s) and is shed; its own and lower arrivals do not count against it.
    ctx = _ctx("batch", {"batch": 11_000})
    assert not decide(ctx).shed
    loads = dict(ctx.classes)
    loads["interactive"] = ClassLoad(0, 0.0, 0.0, 500.0, 3_000.0, arrivals_per_s=50.0)
    busy = ShedContext("batch", 50.0, loads, 100.0, CFG)
    assert predicted_wait_ms(busy, "batch") == pytest.approx(220_000.0)
    assert decide(busy).shed
    loads["batch"] = ClassLoad(11_000, 0.0, 0.0, 120_000.0, 300_000.0, arrivals_per_s=500.0)
    assert predicted_wait_ms(ShedContext("batch", 50.0, loads, 100.0, CFG), "batch") == pytest.approx(220_000.0)


def test_arrivals_above_capacity_leave_a_finite_prediction() -> None:
    loads = dict(_ctx("document", {"document": 100}).classes)
    loads["interactive"] = ClassLoad(0, 0.0, 0.0, 500.0, 3_000.0, arrivals_per_s=1_000.0)
    ctx = ShedContext("document", 50.0, loads, 100.0, CFG)
    assert predicted_wait_ms(ctx, "document") == pytest.approx(100 / 5.0 * 1000.0)  # 5 % of the drain rate
    decision = decide(ctx)
    assert decision.shed and decision.retry_after_s == pytest.approx(20.0)


def test_a_request_is_shed_on_its_own_deadline_when_tighter_than_its_class() -> None:
    # 1,000 batch segments ahead at 100/s: 10 s. Inside batch's 300 s deadline, past a 5 s one the client set.
    loads = _ctx("batch", {"batch": 1_000}).classes
    assert not decide(ShedContext("batch", 50.0, loads, 100.0, CFG)).shed
    tight = decide(ShedContext("batch", 50.0, loads, 100.0, CFG, deadline_ms=5_000.0))
    assert tight.shed and "3000 ms of its deadline" in tight.reason and tight.retry_after_s == pytest.approx(10.0)
    # 60 % headroom: a 15 s deadline admits waits up to 9 s, a 20 s one up to 12 s.
    assert decide(ShedContext("batch", 50.0, loads, 100.0, CFG, deadline_ms=15_000.0)).shed
    assert not decide(ShedContext("batch", 50.0, loads, 100.0, CFG, deadline_ms=20_000.0)).shed
    assert not decide(ShedContext("interactive", 50.0, loads, 100.0, CFG, deadline_ms=1_000.0)).shed  # all of it


def test_a_lower_class_is_shed_while_more_critical_arrivals_fill_the_engines() -> None:
    loads = dict(_ctx("batch", {}).classes)
    assert not decide(ShedContext("batch", 50.0, loads, 100.0, CFG)).shed  # an idle queue, nothing above
    loads["document"] = ClassLoad(0, 0.0, 0.0, 10_000.0, 30_000.0, arrivals_per_s=60.0)
    loads["interactive"] = ClassLoad(0, 0.0, 0.0, 500.0, 3_000.0, arrivals_per_s=39.0)
    starved = decide(ShedContext("batch", 50.0, loads, 100.0, CFG))
    assert starved.shed and "starved" in starved.reason
    assert not decide(ShedContext("document", 50.0, loads, 100.0, CFG)).shed  # 61/s left for documents
    assert not decide(ShedContext("interactive", 50.0, loads, 100.0, CFG)).shed


def test_a_slow_queue_is_also_predicted_from_its_own_completion_rate() -> None:
    # 80 document segments queued; the shared rate says 0.8 s, but documents have been completing at 10/s (8 s).
    loads = dict(_ctx("document", {}).classes)

    def with_document(ewma_wait_ms: float) -> ShedContext:
        loads["document"] = ClassLoad(80, 0.0, ewma_wait_ms, 10_000.0, 30_000.0, completions_per_s=10.0)
        return ShedContext("document", 50.0, loads, 100.0, CFG, deadline_ms=10_000.0)

    assert predicted_wait_ms(with_document(100.0), "document") == pytest.approx(800.0)  # recent waits short
    slow = with_document(3_000.0)  # recent waits at 30 % of the request's 10 s deadline: the queue is slow
    assert predicted_wait_ms(slow, "document") == pytest.approx(8_000.0)
    assert decide(slow).shed  # 8 s is past 60 % of 10 s
