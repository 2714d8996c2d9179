"""Scheduler end to end on a FakeClock: batching triggers, order, deadlines, overload, failures, shutdown."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from scheduling_fakes import CLASSES, MODEL, FakeBackend, Harness, advance, rank_of, settle

from peakgate.backends.base import DecodeOptions
from peakgate.clock import FakeClock
from peakgate.config import BatcherConfig
from peakgate.errors import (
    BackendError,
    ConfigError,
    DeadlineExceeded,
    EngineCrashed,
    EngineTimeout,
    InputTooLarge,
    Overloaded,
    Unavailable,
    UnknownModel,
)
from peakgate.observe.metrics import Metrics
from peakgate.resilience.settings import ConcurrencyConfig
from peakgate.scheduling import Scheduler
from peakgate.scheduling.queue import BatchKey, WorkItem
from peakgate.scheduling.scheduler import doomed


@pytest.fixture
async def h() -> AsyncIterator[Harness]:
    harness = Harness()
    await harness.scheduler.start()
    yield harness
    await harness.scheduler.close()


async def started(harness: Harness) -> Harness:
    await harness.scheduler.start()
    return harness


async def test_documents_are_split_batched_and_reassembled(h: Harness) -> None:
    task = h.submit("First one. Second one?\n\n  Third!", "  Short ", "", "\n")
    await settle()
    await h.flush()
    assert await task == ["<First one.> <Second one?>\n\n  <Third!>", "  <Short> ", "", "\n"]
    assert [c.segments for c in h.backend.calls] == [("First one.", "Second one?", "Third!", "Short")]


async def test_without_splitting_each_segment_goes_whole(h: Harness) -> None:
    task = h.submit(" One. Two. ", split=False)
    await settle()
    await h.flush()
    assert await task == [" <One. Two.> "]


async def test_decode_options_come_from_the_priority_class(h: Harness) -> None:
    task = h.submit("Report.", priority="document", within=60)
    await settle()
    await h.flush()
    await task
    assert h.backend.calls[0].options == DecodeOptions(beam_size=2, max_decoding_length=256)


async def test_the_engine_is_told_which_batches_are_urgent(h: Harness) -> None:
    tasks = [h.submit("Now."), h.submit("Later.", priority="batch", within=60)]
    await settle()
    await h.flush()
    await asyncio.gather(*tasks)
    assert {c.segments: c.options.urgent for c in h.backend.calls} == {("Now.",): True, ("Later.",): False}


async def test_preferred_batch_size_runs_without_waiting() -> None:
    h = await started(Harness(BatcherConfig(preferred_batch_sizes=(2,), max_queue_delay_ms=5.0)))
    task = h.submit("One. Two. Three.")
    await settle()
    assert [c.segments for c in h.backend.calls] == [("One.", "Two.")]
    await h.flush()
    assert await task == ["<One.> <Two.> <Three.>"]
    await h.scheduler.close()


async def test_partial_batch_runs_once_the_queue_delay_passes() -> None:
    h = await started(Harness(BatcherConfig(preferred_batch_sizes=(8,), max_queue_delay_ms=5.0)))
    task = h.submit("One. Two. Three.")
    await settle()
    await advance(h.clock, 0.004)
    assert h.backend.calls == []
    await advance(h.clock, 0.002)
    assert await task == ["<One.> <Two.> <Three.>"]
    assert len(h.backend.calls) == 1
    await h.scheduler.close()


async def test_token_budget_splits_batches() -> None:
    h = await started(Harness(BatcherConfig(preferred_batch_sizes=(), max_batch_tokens=10)))
    task = h.submit("Sixteen chars 1. Sixteen chars 2. Sixteen chars 3.")  # 4 tokens each
    await settle()
    await h.flush()
    await settle()
    await task
    assert [len(c.segments) for c in h.backend.calls] == [2, 1]
    await h.scheduler.close()


async def test_interactive_runs_before_batch_and_earlier_deadlines_first() -> None:
    h = await started(Harness(BatcherConfig(preferred_batch_sizes=(), max_batch_size=1)))
    gate = h.backend.hold()
    blocker = h.submit("Blocker.", within=100)
    await settle()
    await h.flush()
    tasks = [h.submit("Bulk.", priority="batch", within=100), h.submit("Late.", within=50),
             h.submit("Soon.", within=20)]
    await settle()
    await h.flush()
    gate.set()
    await settle()
    await blocker
    for task in tasks:
        await task
    assert h.backend.segments == ["Blocker.", "Soon.", "Late.", "Bulk."]
    await h.scheduler.close()


async def test_expired_sentences_fail_with_deadline_exceeded_and_never_run(h: Harness) -> None:
    gate = h.backend.hold()
    blocker = h.submit("Blocker.", within=100)
    await settle()
    await h.flush()
    doomed = h.submit("Doomed.", within=1.0)
    await settle()
    await advance(h.clock, 1.0)
    with pytest.raises(DeadlineExceeded):
        await doomed
    gate.set()
    await settle()
    await blocker
    assert h.backend.segments == ["Blocker."]
    assert h.sample("peakgate_dropped_total", reason="deadline") == 1
    assert h.scheduler.queue_depth(MODEL) == 0


async def test_a_deadline_already_passed_is_refused_up_front(h: Harness) -> None:
    with pytest.raises(DeadlineExceeded):
        await h.submit("Late.", within=0)
    assert h.scheduler.queue_depth(MODEL) == 0


async def test_full_queue_rejects_the_whole_request_with_a_retry_hint() -> None:
    h = await started(Harness(BatcherConfig(preferred_batch_sizes=(), max_queue_len=3)))
    first = h.submit("One. Two. Three.")
    await settle()
    for rejected in (h.submit("Four. Five."), h.submit("One. Four.")):
        with pytest.raises(Overloaded) as info:
            await rejected
        assert info.value.retry_after_s is not None
        assert info.value.retry_after_s > 0
    assert h.scheduler.queue_depth(MODEL) == 3
    await h.flush()
    assert await first == ["<One.> <Two.> <Three.>"]
    assert h.backend.segments == ["One.", "Two.", "Three."]
    with pytest.raises(InputTooLarge):
        await h.submit("A one. A two. A three. A four.")
    await h.scheduler.close()


async def test_backend_error_fails_only_its_own_batch(h: Harness) -> None:
    h.backend.fail, h.backend.fail_target = RuntimeError("engine exploded"), "fr"
    ok, broken = h.submit("Hello.", target="es"), h.submit("Hello.", target="fr")
    await settle()
    await h.flush()
    assert await ok == ["<Hello.>"]
    with pytest.raises(BackendError) as info:
        await broken
    assert isinstance(info.value.__cause__, RuntimeError)
    assert h.sample("peakgate_backend_errors_total", kind="backend_error") == 1


async def test_peakgate_errors_from_the_engine_pass_through(h: Harness) -> None:
    h.backend.fail = EngineCrashed("pipeline died")
    task = h.submit("Hello.")
    await settle()
    await h.flush()
    with pytest.raises(EngineCrashed):
        await task
    assert h.sample("peakgate_backend_errors_total", kind="engine_crashed") == 1


async def test_missing_translations_fail_the_batch(h: Harness) -> None:
    h.backend.short_by = 1
    task = h.submit("One. Two.")
    await settle()
    await h.flush()
    with pytest.raises(BackendError, match="1 translations for 2"):
        await task


async def test_stuck_backend_hits_the_deadline_promptly_and_the_worker_recovers(h: Harness) -> None:
    h.backend.hold()  # never released
    stuck = h.submit("Stuck.", within=2.0)
    await settle()
    await h.flush()
    await advance(h.clock, 2.0)
    with pytest.raises(DeadlineExceeded):
        await stuck
    assert h.sample("peakgate_backend_errors_total", kind="engine_timeout") == 1
    h.backend.gate = None
    after = h.submit("After.")
    await settle()
    await h.flush()
    assert await after == ["<After.>"]


async def test_batch_timeout_caps_a_stuck_call_before_the_deadline() -> None:
    h = await started(Harness(batch_timeout_s=1.0))
    h.backend.hold()
    task = h.submit("Stuck.", within=60)
    await settle()
    await h.flush()
    await advance(h.clock, 1.0)
    with pytest.raises(EngineTimeout):
        await task
    await h.scheduler.close()


@pytest.mark.parametrize(("concurrency", "overtakes"), [(1, False), (2, True)])
async def test_concurrent_workers_let_batches_overtake_a_slow_one(concurrency: int, overtakes: bool) -> None:
    h = await started(Harness(concurrency=concurrency))
    gate = h.backend.hold()
    slow = h.submit("Slow.", within=60)
    await settle()
    await h.flush()
    h.backend.gate = None  # only the call already running stays blocked
    fast = h.submit("Fast.", within=60)
    await settle()
    await h.flush()
    assert fast.done() is overtakes
    gate.set()
    await settle()
    assert (await slow, await fast) == (["<Slow.>"], ["<Fast.>"])
    await h.scheduler.close()


async def test_close_fails_queued_and_running_sentences_and_refuses_new_ones(h: Harness) -> None:
    h.backend.hold()
    running = h.submit("Running.", within=60)
    await settle()
    await h.flush()
    queued = h.submit("Queued.", within=60)
    await settle()
    await h.scheduler.close()
    for task in (running, queued):
        with pytest.raises(Unavailable):
            await task
    assert h.sample("peakgate_dropped_total", reason="shutdown") == 1
    with pytest.raises(Unavailable):
        await h.submit("Too late.")
    with pytest.raises(Unavailable):
        await h.scheduler.start()


async def test_submit_before_start_is_refused() -> None:
    h = Harness()
    with pytest.raises(Unavailable):
        await h.submit("Early.")


async def test_unknown_model(h: Harness) -> None:
    with pytest.raises(UnknownModel):
        await h.scheduler.submit("nope", ["x"], "en", "es", "interactive", h.clock.now() + 1)
    with pytest.raises(UnknownModel):
        h.scheduler.queue_depth("nope")


async def test_queue_depth_oldest_wait_and_metrics(h: Harness) -> None:
    assert (h.scheduler.queue_depth(MODEL), h.scheduler.oldest_wait_s(MODEL)) == (0, 0.0)
    gate = h.backend.hold()
    task = h.submit("One. Two.")
    await settle()
    await advance(h.clock, 0.003)
    assert h.scheduler.queue_depth(MODEL) == 2
    assert h.scheduler.oldest_wait_s(MODEL) == pytest.approx(0.003)
    assert h.sample("peakgate_queue_length") == 2
    await advance(h.clock, 0.002)
    assert h.sample("peakgate_queue_length") == 0
    await advance(h.clock, 0.5)
    gate.set()
    await task
    assert h.sample("peakgate_batch_size_sum") == 2
    assert h.sample("peakgate_queue_wait_seconds_count", priority="interactive") == 2
    assert h.sample("peakgate_queue_wait_seconds_sum", priority="interactive") == pytest.approx(0.01)
    assert h.sample("peakgate_model_busy_seconds_total") == pytest.approx(0.5)


def test_configuration_is_checked_up_front() -> None:
    args = ({MODEL: FakeBackend()}, BatcherConfig(), FakeClock(), Metrics())
    with pytest.raises(ConfigError, match="missing"):
        Scheduler(args[0], args[1], {"interactive": CLASSES["interactive"]}, args[2], args[3])
    with pytest.raises(ConfigError, match="concurrency"):
        Scheduler(args[0], args[1], CLASSES, args[2], args[3], 0)


async def test_a_worker_stays_reserved_for_interactive_while_it_is_recent() -> None:
    h = await started(Harness(BatcherConfig(preferred_batch_sizes=(), max_queue_delay_ms=5.0, reserve_window_s=2.0),
                              concurrency=2))
    first = h.submit("Hi.")
    await settle()
    await h.flush()
    assert await first == ["<Hi.>"]
    gate = h.backend.hold()
    stuck = h.submit("B1.", priority="batch", within=60)
    await settle()
    await h.flush()
    h.backend.gate = None  # B1 keeps the unreserved worker busy
    waiting = h.submit("B2.", priority="batch", within=60)
    await settle()
    await h.flush()
    assert not waiting.done()  # the reserved worker leaves batch work alone...
    urgent = h.submit("Now.")
    await settle()
    await h.flush()
    assert await urgent == ["<Now.>"]  # ...so interactive runs at once beside the stuck batch
    await advance(h.clock, 2.1)  # no interactive traffic for the reserve window: the worker takes anything
    await settle()
    await h.flush()
    assert await waiting == ["<B2.>"]
    gate.set()
    assert await stuck == ["<B1.>"]
    await h.scheduler.close()


async def test_lookahead_hands_one_batch_to_a_busy_engine_ahead_and_no_more() -> None:
    h = await started(Harness(BatcherConfig(preferred_batch_sizes=(), max_queue_delay_ms=5.0, lookahead_batches=1)))
    gate = h.backend.hold()
    tasks = []
    for i in range(3):  # one at a time so each forms its own batch
        tasks.append(h.submit(f"S{i}.", within=60))
        await settle()
        await h.flush()
    assert [c.segments for c in h.backend.calls] == [("S0.",), ("S1.",)]  # one running, one handed over ahead
    gate.set()
    assert [await t for t in tasks] == [["<S0.>"], ["<S1.>"], ["<S2.>"]]
    await h.scheduler.close()


async def test_lookahead_never_lets_lower_classes_take_the_reserved_replica() -> None:
    config = BatcherConfig(preferred_batch_sizes=(), max_queue_delay_ms=5.0, reserve_window_s=60.0, lookahead_batches=1)
    h = await started(Harness(config, concurrency=2))
    hello = h.submit("Hi.")
    await settle()
    await h.flush()
    assert await hello == ["<Hi.>"]  # interactive traffic is now recent
    gate = h.backend.hold()
    first = h.submit("B1.", priority="batch", within=60)
    await settle()
    await h.flush()
    second = h.submit("B2.", priority="batch", within=60)
    await settle()
    await h.flush()
    assert [c.segments for c in h.backend.calls[1:]] == [("B1.",)]  # three workers, one lower-class slot
    h.backend.gate = None
    urgent = h.submit("Now.")
    await settle()
    await h.flush()
    assert urgent.done() and urgent.result() == ["<Now.>"]  # interactive still gets a worker at once
    assert not second.done()
    gate.set()
    await settle()
    await h.flush()
    assert (await first, await second) == (["<B1.>"], ["<B2.>"])  # B1's end freed the slot within the window
    await h.scheduler.close()


async def test_adaptive_limit_caps_batches_in_flight_and_frees_slots_on_timeouts() -> None:
    limits = ConcurrencyConfig(initial_limit=2, min_limit=1, max_limit=2)
    h = Harness(concurrency=4)
    h.scheduler = Scheduler({MODEL: h.backend}, h.batcher, CLASSES, h.clock, h.metrics, 4, limits=limits,
                            batch_timeout_s=1.0)
    await h.scheduler.start()
    gate = h.backend.hold()
    tasks = []
    for i in range(4):  # four batches' worth, one at a time so each forms its own batch
        tasks.append(h.submit(f"B{i}.", priority="batch", within=60, split=False))
        await settle()
        await h.flush()
    assert len(h.backend.calls) == 2  # four workers, but the limit lets two batches run
    await advance(h.clock, 1.1)  # both time out (drops: the limit shrinks) and give their slots back
    await settle()
    gate.set()
    await settle()
    await h.flush()
    results = await asyncio.gather(*tasks, return_exceptions=True)
    assert sum(isinstance(r, EngineTimeout) for r in results) == 2
    assert [r for r in results if not isinstance(r, BaseException)] == [["<B2.>"], ["<B3.>"]]
    await h.scheduler.close()


async def test_bulk_replicas_take_lower_classes_whole_while_interactive_is_recent() -> None:
    # Two replicas at the server's priority plus one low-priority bulk replica (CostModel.bulk_slots).
    config = BatcherConfig(preferred_batch_sizes=(), max_queue_delay_ms=5.0, reserve_window_s=60.0,
                           lookahead_batches=0, lower_batch_size_while_urgent=2)
    h = await started(Harness(config, backend=FakeBackend(bulk_slots=1), concurrency=3))
    hello = h.submit("Hi.")
    await settle()
    await h.flush()
    assert await hello == ["<Hi.>"]  # interactive traffic is now recent
    gate = h.backend.hold()
    first = h.submit("B1.", "B2.", "B3.", priority="batch", within=60)
    await settle()
    await h.flush()
    second = h.submit("B4.", priority="batch", within=60)
    await settle()
    await h.flush()
    # One batch, not capped at two sentences (the bulk replica yields the CPU anyway), and nothing more:
    # the replicas at the server's priority stay free for interactive work.
    assert [c.segments for c in h.backend.calls[1:]] == [("B1.", "B2.", "B3.")]
    h.backend.gate = None
    urgent = h.submit("Now.")
    await settle()
    await h.flush()
    assert urgent.done() and not second.done()
    gate.set()
    assert (await first, await second) == (["<B1.>", "<B2.>", "<B3.>"], ["<B4.>"])
    await h.scheduler.close()


async def test_shed_queued_fails_the_starved_classes_queued_work_and_leaves_the_rest(h: Harness) -> None:
    h.backend.hold()
    running = h.submit("Running batch.", priority="batch", within=60)
    await settle()
    await h.flush()
    batch = h.submit("Queued batch.", priority="batch", within=60)
    document = h.submit("Queued document.", priority="document", within=60)
    interactive = h.submit("Queued interactive.", within=60)
    await settle()
    shed = h.scheduler.shed_queued("document", lambda item: Overloaded(f"{item.priority} starved",
                                                                       retry_after_s=2.0))
    assert shed == 2
    for task in (batch, document):
        with pytest.raises(Overloaded) as error:
            await task
        assert error.value.retry_after_s == 2.0
    assert h.sample("peakgate_dropped_total", reason="shed") == 2
    assert not running.done() and not interactive.done()  # a running batch is never cut short
    h.backend.gate.set()
    await h.flush()
    assert await interactive == ["<Queued interactive.>"] and await running == ["<Running batch.>"]


async def test_doomed_items_are_those_that_finish_past_their_deadline_behind_the_ones_before_them() -> None:
    items = [WorkItem.create(f"d{i}", BatchKey("en", "es", DecodeOptions()), "document", deadline, 0.0)
             for i, deadline in enumerate((0.4, 1.0, 1.2, 5.0))]
    other = WorkItem.create("b", BatchKey("en", "es", DecodeOptions()), "batch", 0.1, 0.0)
    # At 2 per second: d0 would finish at 0.5 (late), d1 at 0.5 once d0 is gone (fine), d2 at 1.0, d3 at 1.5.
    assert doomed([items[0], other, *items[1:]], rank_of("document"), 0.0, 2.0) == [items[0]]
    assert doomed(items, rank_of("document"), 0.0, 1.0) == [items[0], items[2]]  # d2: at 2.0, past 1.2
