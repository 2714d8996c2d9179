"""LoadTracker: depth, oldest and EWMA wait per class, drain rate on the clock, feeding the shedding policy."""

from __future__ import annotations

import pytest

from peakgate.clock import FakeClock
from peakgate.config import ClassConfig, PriorityClass
from peakgate.resilience.load import LoadTracker
from peakgate.resilience.settings import SheddingConfig
from peakgate.resilience.shedding import decide

SLAS: dict[PriorityClass, ClassConfig] = {
    "interactive": ClassConfig(deadline_ms=3_000, max_queue_wait_ms=500),
    "document": ClassConfig(deadline_ms=30_000, max_queue_wait_ms=10_000),
    "batch": ClassConfig(deadline_ms=300_000, max_queue_wait_ms=120_000),
}


def test_depth_oldest_and_ewma() -> None:
    clock = FakeClock()
    tracker = LoadTracker(clock, wait_alpha=0.5)
    first = tracker.enqueued("interactive")
    clock.advance(0.2)
    second = tracker.enqueued("interactive")
    clock.advance(0.1)
    load = tracker.load("interactive", SLAS["interactive"])
    assert (load.depth, load.oldest_wait_ms) == (2, pytest.approx(300.0))
    tracker.dequeued("interactive", first)
    assert tracker.load("interactive", SLAS["interactive"]).ewma_wait_ms == pytest.approx(150.0)
    tracker.dequeued("interactive", second, served=False)  # expired: not a wait sample
    load = tracker.load("interactive", SLAS["interactive"])
    assert (load.depth, load.oldest_wait_ms, load.ewma_wait_ms) == (0, 0.0, pytest.approx(150.0))
    tracker.dequeued("interactive", second)  # unknown token: ignored
    with pytest.raises(ValueError):
        LoadTracker(clock, wait_alpha=0.0)


def test_drain_rate_over_the_window() -> None:
    clock = FakeClock()
    tracker = LoadTracker(clock, drain_window_s=10.0)
    tracker.completed(50)
    clock.advance(5.0)
    tracker.completed(50)
    assert tracker.drain_per_s() == pytest.approx(10.0)
    clock.advance(6.0)
    assert tracker.drain_per_s() == pytest.approx(5.0)


def test_arrival_rate_per_class_over_the_window() -> None:
    clock = FakeClock()
    tracker = LoadTracker(clock, drain_window_s=10.0)
    for _ in range(30):
        tracker.enqueued("interactive")
    tracker.enqueued("batch")
    assert tracker.load("interactive", SLAS["interactive"]).arrivals_per_s == pytest.approx(3.0)
    assert tracker.load("batch", SLAS["batch"]).arrivals_per_s == pytest.approx(0.1)
    clock.advance(11.0)
    assert tracker.load("interactive", SLAS["interactive"]).arrivals_per_s == 0.0


def test_completion_rate_per_class_over_the_window() -> None:
    clock = FakeClock()
    tracker = LoadTracker(clock, drain_window_s=10.0)
    tracker.completed(40, "document")
    tracker.completed(10)  # unlabelled: the total only
    assert tracker.load("document", SLAS["document"]).completions_per_s == pytest.approx(4.0)
    assert tracker.drain_per_s() == pytest.approx(5.0)


def test_context_feeds_the_policy() -> None:
    clock = FakeClock()
    tracker = LoadTracker(clock)
    tracker.completed(1_000)  # 100 req/s
    for _ in range(30):
        tracker.enqueued("interactive")  # 300 ms of interactive work: 60% of its budget
    ctx = tracker.context("batch", 50.0, SLAS, SheddingConfig())
    assert ctx.drain_per_s == pytest.approx(100.0)
    assert decide(ctx).shed
    assert not decide(tracker.context("document", 50.0, SLAS, SheddingConfig())).shed


def test_the_wait_average_fades_once_nothing_is_served() -> None:
    # Issue 19: the EWMA was fed only by served requests, so after a surge that shed everything it froze at the
    # surge's last wait and every later request was shed on it, for as long as the process ran.
    clock = FakeClock()
    tracker = LoadTracker(clock, wait_alpha=1.0, wait_half_life_s=2.0)
    token = tracker.enqueued("interactive")
    clock.advance(2.998)
    tracker.dequeued("interactive", token)
    assert tracker.load("interactive", SLAS["interactive"]).ewma_wait_ms == pytest.approx(2998.0)
    clock.advance(2.0)
    assert tracker.load("interactive", SLAS["interactive"]).ewma_wait_ms == pytest.approx(1499.0)
    clock.advance(8.0)
    assert tracker.load("interactive", SLAS["interactive"]).ewma_wait_ms == pytest.approx(2998.0 / 32)


def test_a_new_sample_blends_with_the_faded_average() -> None:
    clock = FakeClock()
    tracker = LoadTracker(clock, wait_alpha=0.5, wait_half_life_s=1.0)
    token = tracker.enqueued("batch")
    clock.advance(0.4)
    tracker.dequeued("batch", token)  # a 400 ms sample: 0 -> 200 ms
    clock.advance(1.0)  # faded to 100 ms
    token = tracker.enqueued("batch")
    tracker.dequeued("batch", token)  # a 0 ms sample: 100 -> 50 ms
    assert tracker.load("batch", SLAS["batch"]).ewma_wait_ms == pytest.approx(50.0)
    with pytest.raises(ValueError):
        LoadTracker(clock, wait_half_life_s=0.0)
