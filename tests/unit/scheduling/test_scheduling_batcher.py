"""batcher.plan: a pure function of queue contents, time and limits."""

from __future__ import annotations

import pytest

from peakgate.backends.base import CostModel, DecodeOptions
from peakgate.config import BatcherConfig, PriorityClass
from peakgate.scheduling.batcher import BatchPlan, Limits, Wait, plan
from peakgate.scheduling.queue import BatchKey, RequestQueue, WorkItem

FAST = BatchKey("en", "es", DecodeOptions(beam_size=1))
BEAM = BatchKey("en", "es", DecodeOptions(beam_size=4))
ENGINE = CostModel(max_batch_size=64, preferred_batch_sizes=(), warm=True)


def config(**overrides: object) -> BatcherConfig:
    base: dict[str, object] = {"max_batch_size": 8, "preferred_batch_sizes": (), "max_queue_delay_ms": 5.0}
    return BatcherConfig.model_validate({**base, **overrides})


def fill(q: RequestQueue, n: int, *, key: BatchKey = FAST, priority: PriorityClass = "interactive",
         now: float = 0.0, deadline: float = 100.0, text: str = "x") -> list[WorkItem]:
    items = [WorkItem.create(f"{text}{i}", key, priority, deadline, now) for i in range(n)]
    for it in items:
        q.push(it)
    return items


def batch(decision: BatchPlan | Wait) -> BatchPlan:
    assert isinstance(decision, BatchPlan), decision
    return decision


async def test_empty_queue_waits_for_work() -> None:
    assert plan(RequestQueue("m", 10), 0.0, config(), ENGINE) == Wait(None)


async def test_preferred_size_goes_at_once_with_the_largest_that_fits() -> None:
    q = RequestQueue("m", 100)
    items = fill(q, 7)
    decision = batch(plan(q, 0.0, config(preferred_batch_sizes=(2, 4, 6)), ENGINE))
    assert (decision.trigger, decision.items) == ("preferred", tuple(items[:6]))


async def test_engine_preferred_sizes_count_too() -> None:
    q = RequestQueue("m", 100)
    fill(q, 3)
    engine = CostModel(max_batch_size=64, preferred_batch_sizes=(3,), warm=True)
    assert batch(plan(q, 0.0, config(), engine)).trigger == "preferred"


async def test_partial_batch_waits_for_the_delay_then_goes() -> None:
    q = RequestQueue("m", 100)
    items = fill(q, 3, now=1.0)
    assert plan(q, 1.004, config(preferred_batch_sizes=(8,)), ENGINE) == Wait(pytest.approx(1.005))
    decision = batch(plan(q, 1.005, config(preferred_batch_sizes=(8,)), ENGINE))
    assert (decision.trigger, decision.items) == ("delay", tuple(items))


async def test_full_batch_goes_at_once_capped_by_the_engine() -> None:
    q = RequestQueue("m", 100)
    items = fill(q, 6)
    small_engine = CostModel(max_batch_size=4, preferred_batch_sizes=(), warm=True)
    decision = batch(plan(q, 0.0, config(), small_engine))
    assert (decision.trigger, decision.items) == ("full", tuple(items[:4]))
    assert Limits.of(config(max_batch_size=2), ENGINE).max_size == 2


async def test_token_budget_caps_the_batch_but_an_oversized_item_runs_alone() -> None:
    q = RequestQueue("m", 100)
    big = WorkItem.create("y" * 400, FAST, "interactive", 100.0, 0.0)  # 100 tokens
    q.push(big)
    small = fill(q, 3, text="x" * 99)  # 25 tokens each (with the index digit)
    first = batch(plan(q, 0.0, config(max_batch_tokens=60), ENGINE))
    assert (first.trigger, first.items) == ("full", (big,))
    q.take(first.items)
    second = batch(plan(q, 0.0, config(max_batch_tokens=60), ENGINE))
    assert (second.trigger, second.items) == ("full", tuple(small[:2]))


async def test_batches_never_mix_keys() -> None:
    q = RequestQueue("m", 100)
    fill(q, 2, key=FAST)
    fill(q, 2, key=BEAM)
    decision = batch(plan(q, 1.0, config(), ENGINE))
    assert {it.key for it in decision.items} == {decision.key}
    assert len(decision.items) == 2


async def test_more_urgent_class_runs_first_and_deadlines_order_within_a_class() -> None:
    q = RequestQueue("m", 100)
    fill(q, 2, key=BEAM, priority="batch", now=0.0)
    late = WorkItem.create("late", FAST, "interactive", 50.0, 0.5)
    soon = WorkItem.create("soon", FAST, "interactive", 20.0, 0.5)
    q.push(late)
    q.push(soon)
    decision = batch(plan(q, 1.0, config(max_batch_size=1), ENGINE))
    assert decision.items == (soon,)


async def test_ready_lower_class_is_held_while_a_more_urgent_one_is_about_to_be_ready() -> None:
    q = RequestQueue("m", 100)
    fill(q, 2, key=BEAM, priority="batch", now=0.0)
    fill(q, 1, key=FAST, priority="interactive", now=0.003)
    assert plan(q, 0.006, config(), ENGINE) == Wait(pytest.approx(0.008))
    assert batch(plan(q, 0.008, config(), ENGINE)).key == FAST


async def test_expired_items_are_listed_for_dropping_and_never_planned() -> None:
    q = RequestQueue("m", 100)
    gone = fill(q, 2, deadline=1.0, text="gone")
    kept = fill(q, 2, deadline=9.0, text="kept")
    decision = batch(plan(q, 1.0, config(), ENGINE))
    assert decision.expired == tuple(gone)
    assert decision.items == tuple(kept)


async def test_wait_wakes_at_the_next_deadline_to_drop_it_on_time() -> None:
    q = RequestQueue("m", 100)
    fill(q, 1, deadline=0.002)
    assert plan(q, 0.0, config(), ENGINE) == Wait(0.002)


async def test_a_reserved_worker_plans_only_the_most_urgent_class() -> None:
    q = RequestQueue("m", 20)
    fill(q, 3, priority="batch", text="b")
    assert isinstance(plan(q, 1.0, config(), ENGINE, max_rank=0), Wait)
    fill(q, 2, priority="interactive", text="i")
    decision = batch(plan(q, 1.0, config(), ENGINE, max_rank=0))  # riders are off by default
    assert [item.text for item in decision.items] == ["i0", "i1"]
    assert batch(plan(q, 1.0, config(), ENGINE, max_rank=2)).items == decision.items


async def test_without_riders_interactive_batches_carry_no_lower_class_fill_and_go_at_once() -> None:
    q = RequestQueue("m", 20)
    fill(q, 3, priority="batch", text="b")
    fill(q, 2, priority="interactive", text="i")
    first = batch(plan(q, 0.0, config(), ENGINE))  # lower classes wait behind it
    assert ([item.text for item in first.items], first.trigger) == (["i0", "i1"], "full")
    q.take(first.items)
    later = batch(plan(q, 1.0, config(), ENGINE))
    assert [item.text for item in later.items] == ["b0", "b1", "b2"]


async def test_interactive_batches_take_shorter_lower_class_riders_up_to_the_fill_size() -> None:
    q = RequestQueue("m", 40)
    fill(q, 1, priority="document", text="long document sentence, far longer than the interactive one ")
    fill(q, 6, priority="batch", text="b")
    fill(q, 1, priority="batch", deadline=0.5, text="late")  # past its deadline at t=1: never a rider
    fill(q, 2, priority="interactive", text="interactive ")
    first = batch(plan(q, 1.0, config(urgent_fill_batch_size=5), ENGINE))
    assert ([item.text for item in first.items], first.trigger) == (
        ["interactive 0", "interactive 1", "b0", "b1", "b2"], "full")
    assert first.items[0].priority == "interactive"  # the head still marks the batch urgent
    reserved = batch(plan(q, 1.0, config(urgent_fill_batch_size=5), ENGINE, max_rank=0))
    assert reserved.items == first.items  # a reserved worker takes riders too


async def test_lower_class_batches_are_capped_while_interactive_is_recent() -> None:
    q = RequestQueue("m", 40)
    fill(q, 20, priority="batch", text="b")
    capped = batch(plan(q, 0.0, config(max_batch_size=32), ENGINE, lower_cap=8))
    assert (len(capped.items), capped.trigger) == (8, "full")
    assert len(batch(plan(q, 1.0, config(max_batch_size=32), ENGINE)).items) == 20
