"""RequestQueue: ordering, bounds, promotion, removal, compaction and the drain-rate hint."""

from __future__ import annotations

import pytest

from peakgate.backends.base import DecodeOptions
from peakgate.config import PriorityClass
from peakgate.errors import DeadlineExceeded, InputTooLarge, Overloaded
from peakgate.scheduling.queue import BatchKey, DrainRate, ItemState, RequestQueue, WorkItem, expired_error

KEY = BatchKey("en", "es", DecodeOptions())
OTHER = BatchKey("en", "fr", DecodeOptions())


def item(text: str, priority: PriorityClass = "interactive", deadline: float = 10.0, now: float = 0.0,
         key: BatchKey = KEY) -> WorkItem:
    return WorkItem.create(text, key, priority, deadline, now)


def texts(items: object) -> list[str]:
    return [i.text for i in items]  # type: ignore[attr-defined]


class Recorder:
    def __init__(self) -> None:
        self.lengths: list[int] = []
        self.drops: list[tuple[str, int]] = []

    def queue(self, max_len: int = 100) -> RequestQueue:
        return RequestQueue("m", max_len, on_length=self.lengths.append,
                            on_drop=lambda reason, n: self.drops.append((reason, n)))


async def test_groups_order_by_class_then_deadline() -> None:
    q = RequestQueue("m", 100)
    for it in (item("b", "batch", 1), item("i2", deadline=9), item("d", "document", 2), item("i1", deadline=5)):
        q.push(it)
    (group,) = q.groups()
    assert texts(group.ordered()) == ["i1", "i2", "d", "b"]
    assert texts(q.by_deadline()) == ["b", "d", "i1", "i2"]


async def test_items_are_grouped_by_batch_key() -> None:
    q = RequestQueue("m", 100)
    q.push(item("a"))
    q.push(item("b", key=OTHER))
    q.push(item("c"))
    assert {g.key: texts(g.ordered()) for g in q.groups()} == {KEY: ["a", "c"], OTHER: ["b"]}


async def test_full_queue_refuses_with_a_retry_hint_and_changes_nothing() -> None:
    rec = Recorder()
    q = rec.queue(max_len=2)
    q.push(item("a"))
    with pytest.raises(Overloaded) as info:
        q.ensure_room(2)
    assert info.value.retry_after_s is not None
    assert info.value.retry_after_s > 0
    assert len(q) == 1
    assert rec.lengths == [1]
    q.ensure_room(1)  # exactly fits


async def test_a_request_bigger_than_the_whole_queue_is_too_large_not_overloaded() -> None:
    with pytest.raises(InputTooLarge):
        RequestQueue("m", 2).ensure_room(3)


async def test_promote_moves_an_item_up_and_extends_its_deadline() -> None:
    q = RequestQueue("m", 100)
    slow, fast = item("slow", "batch", deadline=50), item("fast", deadline=20)
    q.push(slow)
    q.push(fast)
    q.promote(slow, "interactive", 30)
    q.promote(fast, "batch", 5)  # neither less urgent nor an earlier deadline: no change
    assert (slow.priority, slow.deadline, fast.priority, fast.deadline) == ("interactive", 50, "interactive", 20)
    (group,) = q.groups()
    assert texts(group.ordered()) == ["fast", "slow"]  # stale heap entries are skipped
    assert texts(q.by_deadline()) == ["fast", "slow"]


async def test_take_and_drop_leave_the_queue_and_report() -> None:
    rec = Recorder()
    q = rec.queue()
    a, b, c = item("a", now=1), item("b", now=2), item("c", now=3)
    for it in (a, b, c):
        q.push(it)
    q.take([a])
    assert a.state is ItemState.RUNNING
    assert q.oldest_enqueued_at() == 2
    assert q.drop([a, c], expired_error, "deadline") == 1  # a is running: not droppable
    assert rec.drops == [("deadline", 1)]
    assert isinstance(c.future.exception(), DeadlineExceeded)
    assert not a.future.done()
    assert texts(q.by_deadline()) == ["b"]
    assert q.drop_all(expired_error, "shutdown") == 1
    assert (len(q), q.oldest_enqueued_at(), list(q.groups())) == (0, None, [])
    assert rec.lengths[-1] == 0
    assert q.drop([b], expired_error, "again") == 0
    assert rec.drops == [("deadline", 1), ("shutdown", 1)]


async def test_order_survives_compaction_after_heavy_churn() -> None:
    q = RequestQueue("m", 1_000)
    items = [item(f"s{i}", deadline=1_000 - i) for i in range(300)]
    for it in items:
        q.push(it)
    for it in items[:250]:
        q.promote(it, "interactive", it.deadline + 1)
    q.take(items[:200])
    assert len(q) == 100
    assert texts(q.by_deadline()) == [f"s{i}" for i in range(299, 199, -1)]
    assert q.oldest_enqueued_at() == 0.0


async def test_taking_the_most_urgent_items_pops_their_entries_off_the_heap() -> None:
    # Below the compaction threshold: without pruning, every later plan would walk all 50 taken entries first.
    q = RequestQueue("m", 1_000)
    urgent = [item(f"i{i}", deadline=1 + i) for i in range(50)]
    later = [item(f"b{i}", "batch", deadline=100 + i) for i in range(10)]
    for it in (*later, *urgent):
        q.push(it)
    q.take(urgent)
    (group,) = q.groups()
    assert len(group.heap) == 10
    assert texts(group.ordered()) == texts(q.by_deadline()) == [f"b{i}" for i in range(10)]


async def test_a_promoted_items_old_entry_does_not_linger_at_the_top() -> None:
    q = RequestQueue("m", 1_000)
    first, second = item("a", "batch", deadline=1), item("b", "batch", deadline=2)
    q.push(first)
    q.push(second)
    q.promote(first, "batch", 3)  # a later deadline: its old entry, still first in order, is stale
    (group,) = q.groups()
    assert len(group.heap) == 2
    assert texts(group.ordered()) == texts(q.by_deadline()) == ["b", "a"]


def test_drain_rate_turns_backlog_into_seconds() -> None:
    rate = DrainRate(workers=2, prior_s_per_item=0.01, alpha=1.0)
    rate.record(items=10, seconds=1.0)
    assert rate.s_per_item == pytest.approx(0.1)
    assert rate.retry_after_s(40) == pytest.approx(2.0)  # 40 items x 0.1s over 2 workers
    assert rate.retry_after_s(0) == pytest.approx(0.1)  # never tells a client to retry at once


async def test_lower_classes_leave_headroom_for_interactive() -> None:
    q = RequestQueue("m", 8, lower_share=0.5)
    q.ensure_room(4, rank=2)
    for i in range(4):
        q.push(WorkItem.create(f"b{i}", KEY, "batch", 100.0, 0.0))
    with pytest.raises(Overloaded):
        q.ensure_room(1, rank=2)  # batch has its half
    q.ensure_room(4, rank=0)  # interactive still fits
    with pytest.raises(InputTooLarge):
        q.ensure_room(5, rank=1)  # more than a document may ever queue: retrying is futile
