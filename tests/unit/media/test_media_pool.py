"""The media pool: admission by units per kind, Retry-After, metrics, the ladder's features, the niced processes."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable
from concurrent.futures import Executor, ThreadPoolExecutor

import pytest

from peakgate.clock import FakeClock
from peakgate.errors import Overloaded
from peakgate.media.pool import MediaPool, ladder_level
from peakgate.media.settings import MediaConfig
from peakgate.observe.metrics import Metrics

CONFIG = MediaConfig(max_queued_megapixels=10.0, max_queued_audio_s=60.0, ocr_concurrency=1)


def _threads(concurrency: int) -> Executor:
    return ThreadPoolExecutor(concurrency)


def _pool(metrics: Metrics, clock: FakeClock, level: Callable[[], int] = lambda: 0,
          config: MediaConfig = CONFIG) -> MediaPool:
    return MediaPool(config, clock, metrics, level, executor=_threads)


def _sample(metrics: Metrics, name: str, **labels: str) -> float | None:
    return metrics.registry.get_sample_value(name, labels)


async def _until(predicate: Callable[[], bool]) -> None:
    for _ in range(50):  # bounded: the task reaches its slot within a few loop turns (no real time passes)
        if predicate():
            return
        await asyncio.sleep(0)
    raise AssertionError("condition never held")


async def test_runs_the_function_and_records_its_time() -> None:
    metrics, clock = Metrics(), FakeClock()
    pool = _pool(metrics, clock)
    assert await pool.run("ocr", 2.0, pow, 3, 4) == 81
    assert _sample(metrics, "peakgate_media_seconds_count", kind="ocr") == 1.0
    assert _sample(metrics, "peakgate_media_queued_units", kind="ocr") == 0.0
    await pool.close()


async def test_two_apps_pools_over_one_services_metrics_both_count() -> None:
    metrics, clock = Metrics(), FakeClock()
    first, second = _pool(metrics, clock), _pool(metrics, clock)
    release = threading.Event()
    busy = asyncio.create_task(first.run("ocr", 3.0, release.wait, 5.0))
    await _until(lambda: _sample(metrics, "peakgate_media_running", kind="ocr") == 1.0)
    assert await second.run("ocr", 2.0, pow, 2, 2) == 4
    assert _sample(metrics, "peakgate_media_queued_units", kind="ocr") == 3.0  # the second's 2 came and went
    release.set()
    assert await busy is True
    assert _sample(metrics, "peakgate_media_seconds_count", kind="ocr") == 2.0
    assert _sample(metrics, "peakgate_media_queued_units", kind="ocr") == 0.0
    await first.close()
    await second.close()


async def test_a_full_kind_refuses_with_retry_after_and_the_other_kind_still_runs() -> None:
    metrics, clock = Metrics(), FakeClock()
    pool = _pool(metrics, clock)
    release = threading.Event()
    first = asyncio.create_task(pool.run("ocr", 8.0, release.wait, 5.0))
    await _until(lambda: _sample(metrics, "peakgate_media_running", kind="ocr") == 1.0)
    clock.advance(16.0)  # 2 s per megapixel, as the running task will have taken
    with pytest.raises(Overloaded) as refused:
        await pool.run("ocr", 4.0, pow, 2, 2)  # 8 + 4 > 10 megapixels
    assert refused.value.retry_after_s is not None and refused.value.retry_after_s >= 1.0
    assert _sample(metrics, "peakgate_media_refused_total", kind="ocr", reason="queue_full") == 1.0
    assert await pool.run("asr", 30.0, pow, 2, 3) == 8  # speech has its own lane
    second = asyncio.create_task(pool.run("ocr", 2.0, pow, 2, 5))  # 8 + 2 fits: queued behind the first
    await _until(lambda: _sample(metrics, "peakgate_media_queued_units", kind="ocr") == 10.0)
    release.set()
    assert await first is True
    assert await second == 32
    await pool.close()


async def test_an_idle_kind_takes_one_task_over_its_cap() -> None:
    pool = _pool(Metrics(), FakeClock())
    assert await pool.run("ocr", 25.0, pow, 5, 2) == 25  # the file caps bound a single task, not the queue cap
    await pool.close()


async def test_retry_after_grows_with_the_measured_seconds_per_unit() -> None:
    metrics, clock = Metrics(), FakeClock()
    pool = _pool(metrics, clock)
    release = threading.Event()
    slow = asyncio.create_task(pool.run("ocr", 9.0, release.wait, 5.0))
    await _until(lambda: _sample(metrics, "peakgate_media_running", kind="ocr") == 1.0)
    with pytest.raises(Overloaded) as before:
        await pool.run("ocr", 5.0, pow, 1, 1)
    clock.advance(900.0)  # the running task takes 100 s per megapixel
    release.set()
    await slow
    blocker = threading.Event()
    busy = asyncio.create_task(pool.run("ocr", 9.0, blocker.wait, 5.0))
    await _until(lambda: _sample(metrics, "peakgate_media_running", kind="ocr") == 1.0)
    with pytest.raises(Overloaded) as after:
        await pool.run("ocr", 5.0, pow, 1, 1)
    assert after.value.retry_after_s is not None and before.value.retry_after_s is not None
    assert after.value.retry_after_s > 10 * before.value.retry_after_s
    blocker.set()
    await busy
    await pool.close()


@pytest.mark.parametrize(("level", "overlay", "stream"), [(0, True, True), (1, False, True), (2, False, False)])
def test_the_ladder_turns_the_overlay_off_before_streaming(level: int, overlay: bool, stream: bool) -> None:
    pool = _pool(Metrics(), FakeClock(), level=lambda: level)
    assert pool.allows("overlay") is overlay
    assert pool.allows("stream") is stream


def test_ladder_level_reads_the_published_gauge() -> None:
    metrics = Metrics()
    level = ladder_level(metrics)
    assert level() == 0
    metrics.degradation_level.set(3)
    assert level() == 3


async def test_the_real_pool_runs_in_niced_processes() -> None:
    pool = MediaPool(MediaConfig(nice=5), FakeClock(), Metrics(), lambda: 0)
    try:
        child = await pool.run("ocr", 1.0, os.nice, 0)
        assert child == min(19, os.nice(0) + 5)
        assert await pool.run("ocr", 1.0, os.getpid) != os.getpid()
    finally:
        await pool.close()


async def test_a_cancelled_caller_holds_its_units_until_the_work_ends() -> None:
    metrics, clock = Metrics(), FakeClock()
    pool = _pool(metrics, clock)
    release = threading.Event()
    caller = asyncio.create_task(pool.run("ocr", 8.0, release.wait, 5.0))
    await _until(lambda: _sample(metrics, "peakgate_media_running", kind="ocr") == 1.0)
    caller.cancel()
    for _ in range(5):
        await asyncio.sleep(0)
    with pytest.raises(Overloaded):  # the worker still runs the cancelled caller's image
        await pool.run("ocr", 4.0, pow, 2, 2)
    release.set()
    with pytest.raises(asyncio.CancelledError):
        await caller
    assert _sample(metrics, "peakgate_media_queued_units", kind="ocr") == 0.0
    assert await pool.run("ocr", 4.0, pow, 2, 2) == 4
    await pool.close()
