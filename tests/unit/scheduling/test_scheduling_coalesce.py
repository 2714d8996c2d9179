"""Coalescing: identical in-flight sentences run once; waiters come and go without hurting each other."""

from __future__ import annotations

import asyncio

import pytest
from scheduling_fakes import Harness, settle

from peakgate.backends.base import DecodeOptions
from peakgate.errors import DeadlineExceeded, Overloaded, Rejected
from peakgate.observe.metrics import Metrics
from peakgate.scheduling.coalesce import Coalescer, normalize
from peakgate.scheduling.queue import BatchKey, ItemState, RequestQueue

KEY = BatchKey("en", "es", DecodeOptions())


def coalescer(max_len: int = 100) -> tuple[Coalescer, RequestQueue, Metrics]:
    metrics = Metrics()
    queue = RequestQueue("m", max_len, on_drop=lambda reason, n: metrics.dropped.labels("m", reason).inc(n))
    return Coalescer(queue, metrics), queue, metrics


def coalesced(metrics: Metrics) -> float:
    return metrics.registry.get_sample_value("peakgate_coalesced_total", {"model": "m"}) or 0.0


def test_normalize_is_nfc_without_outer_whitespace_only() -> None:
    assert normalize("  Cafe\u0301  au  lait\n") == "Café  au  lait"


async def test_identical_texts_share_one_item_and_are_counted() -> None:
    c, queue, metrics = coalescer()
    first = c.acquire(["a", "b", "a"], KEY, "batch", 10.0, 0.0)
    second = c.acquire(["b"], KEY, "batch", 10.0, 0.0)
    assert first[0] is first[2]
    assert second[0] is first[1]
    assert (len(queue), len(c), coalesced(metrics)) == (2, 2, 2)
    assert first[1].waiters == 2


async def test_different_pair_or_options_never_coalesce() -> None:
    c, queue, _ = coalescer()
    c.acquire(["a"], KEY, "batch", 10.0, 0.0)
    c.acquire(["a"], BatchKey("en", "es", DecodeOptions(beam_size=4)), "batch", 10.0, 0.0)
    c.acquire(["a"], BatchKey("en", "fr", DecodeOptions()), "batch", 10.0, 0.0)
    assert len(queue) == 3


async def test_a_joining_waiter_promotes_the_item() -> None:
    c, _, _ = coalescer()
    (item,) = c.acquire(["a"], KEY, "batch", 10.0, 0.0)
    c.acquire(["a"], KEY, "interactive", 20.0, 0.0)
    assert (item.priority, item.deadline) == ("interactive", 20.0)


async def test_a_more_urgent_request_does_not_wait_on_a_running_lower_class_item() -> None:
    c, queue, metrics = coalescer()
    (bulk,) = c.acquire(["a"], KEY, "batch", 10.0, 0.0)
    queue.take([bulk])  # running in a batch-class batch: too late to promote
    (urgent,) = c.acquire(["a"], KEY, "interactive", 5.0, 0.0)
    assert urgent is not bulk and urgent.priority == "interactive"
    assert (len(queue), coalesced(metrics)) == (1, 0)
    (later,) = c.acquire(["a"], KEY, "interactive", 5.0, 0.0)  # later joiners share the urgent item
    assert later is urgent
    bulk.resolve("<a>")
    await settle()
    assert len(c) == 1  # the finished bulk item did not evict the urgent one


async def test_a_running_item_is_shared_by_requests_of_its_class_or_lower() -> None:
    c, queue, _ = coalescer()
    (running,) = c.acquire(["a"], KEY, "document", 10.0, 0.0)
    queue.take([running])
    assert c.acquire(["a"], KEY, "document", 10.0, 0.0)[0] is running
    assert c.acquire(["a"], KEY, "batch", 10.0, 0.0)[0] is running
    assert len(queue) == 0


async def test_full_queue_rejects_only_the_new_sentences_and_enqueues_nothing() -> None:
    c, queue, _ = coalescer(max_len=2)
    c.acquire(["a", "b"], KEY, "batch", 10.0, 0.0)
    assert len(c.acquire(["a", "b"], KEY, "batch", 10.0, 0.0)) == 2  # all shared: no room needed
    with pytest.raises(Overloaded):
        c.acquire(["a", "c"], KEY, "interactive", 99.0, 0.0)
    assert len(queue) == 2
    assert all(it.waiters == 2 and it.priority == "batch" for it in queue.by_deadline())  # untouched


async def test_finished_items_are_not_reused() -> None:
    c, queue, _ = coalescer()
    (item,) = c.acquire(["a"], KEY, "batch", 10.0, 0.0)
    queue.take([item])
    item.resolve("<a>")
    (again,) = c.acquire(["a"], KEY, "batch", 10.0, 0.0)  # before the done-callback ran
    assert again is not item
    await settle()
    assert len(c) == 1


async def test_release_drops_queued_items_nobody_waits_for() -> None:
    c, queue, metrics = coalescer()
    shared, alone, stale = c.acquire(["shared", "alone", "stale"], KEY, "batch", 10.0, 0.0)
    c.acquire(["shared"], KEY, "batch", 10.0, 0.0)
    stale.deadline = 1.0  # as if it had expired in the queue
    c.release([shared, alone, stale], now=5.0)
    assert shared.state is ItemState.QUEUED
    assert isinstance(alone.future.exception(), Rejected)
    assert isinstance(stale.future.exception(), DeadlineExceeded)
    for reason in ("abandoned", "deadline"):
        assert metrics.registry.get_sample_value("peakgate_dropped_total", {"model": "m", "reason": reason}) == 1
    assert len(queue) == 1


async def test_release_never_touches_running_items() -> None:
    c, queue, _ = coalescer()
    (item,) = c.acquire(["a"], KEY, "batch", 10.0, 0.0)
    queue.take([item])
    c.release([item], now=5.0)
    assert not item.future.done()


async def test_concurrent_identical_requests_reach_the_backend_once() -> None:
    h = Harness()
    await h.scheduler.start()
    first, second = h.submit("Hello there."), h.submit("  Hello there. ")
    await settle()
    await h.flush()
    assert await first == ["<Hello there.>"]
    assert await second == ["  <Hello there.> "]
    assert h.backend.segments == ["Hello there."]
    assert h.sample("peakgate_coalesced_total") == 1
    await h.scheduler.close()


async def test_a_cancelled_waiter_does_not_cancel_the_shared_work() -> None:
    h = Harness()
    await h.scheduler.start()
    leaving, staying = h.submit("Same."), h.submit("Same.")
    await settle()
    leaving.cancel()
    await settle()
    await h.flush()
    assert await staying == ["<Same.>"]
    assert leaving.cancelled()
    assert h.backend.segments == ["Same."]
    await h.scheduler.close()


async def test_when_every_waiter_leaves_the_sentence_is_not_run() -> None:
    h = Harness()
    await h.scheduler.start()
    task = h.submit("Nobody wants this.")
    await settle()
    task.cancel()
    await settle()
    await h.flush()
    assert h.backend.calls == []
    assert h.scheduler.queue_depth("fake") == 0
    assert h.sample("peakgate_dropped_total", reason="abandoned") == 1
    with pytest.raises(asyncio.CancelledError):
        await task
    await h.scheduler.close()
