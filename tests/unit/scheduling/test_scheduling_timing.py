"""Clock-bounded waits: results in order, the first failure at once, the deadline on the injected clock."""

from __future__ import annotations

import asyncio

import pytest

from peakgate.clock import FakeClock
from peakgate.errors import DeadlineExceeded, EngineCrashed
from peakgate.scheduling.timing import gather_until, wait_any


def _futures(n: int) -> list[asyncio.Future[str]]:
    loop = asyncio.get_running_loop()
    return [loop.create_future() for _ in range(n)]


async def _settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_gather_until_returns_every_result_in_order_and_leaves_no_timer() -> None:
    clock, futures = FakeClock(), _futures(3)
    task = asyncio.create_task(gather_until(futures, clock, 10.0))
    await _settle()
    for k in (2, 0, 1):
        futures[k].set_result(f"r{k}")
    assert await task == ["r0", "r1", "r2"]
    assert clock.sleepers == 0  # the deadline timer was cancelled
    assert all(not f._callbacks for f in futures)  # our done-callbacks were removed


async def test_gather_until_raises_the_first_failure_without_waiting_for_the_rest() -> None:
    clock, futures = FakeClock(), _futures(2)
    task = asyncio.create_task(gather_until(futures, clock, 10.0))
    await _settle()
    futures[1].set_exception(EngineCrashed("boom"))
    with pytest.raises(EngineCrashed):
        await task
    assert not futures[0].done()  # never cancelled: other requests may share it


async def test_gather_until_raises_at_the_deadline_on_the_fake_clock() -> None:
    clock, futures = FakeClock(), _futures(2)
    task = asyncio.create_task(gather_until(futures, clock, 5.0))
    await _settle()
    futures[0].set_result("done")
    clock.advance(4.9)
    await _settle()
    assert not task.done()
    clock.advance(0.2)
    with pytest.raises(DeadlineExceeded, match="1 of 2"):
        await task


async def test_gather_until_with_everything_done_returns_without_waiting() -> None:
    futures = _futures(1)
    futures[0].set_result("x")
    assert await gather_until(futures, FakeClock(), 1.0) == ["x"]


async def test_wait_any_returns_on_the_first_done_or_at_the_deadline() -> None:
    clock, futures = FakeClock(), _futures(2)
    task = asyncio.create_task(wait_any(futures, clock, None))
    await _settle()
    futures[1].set_result("y")
    await asyncio.wait_for(task, 1.0)
    timed = asyncio.create_task(wait_any(_futures(1), clock, clock.now() + 2.0))
    await _settle()
    clock.advance(2.0)
    await asyncio.wait_for(timed, 1.0)


async def test_cancelling_the_waiter_removes_its_callbacks_and_timer() -> None:
    clock, futures = FakeClock(), _futures(1)
    task = asyncio.create_task(gather_until(futures, clock, 9.0))
    await _settle()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert clock.sleepers == 0 and not futures[0]._callbacks and not futures[0].done()


async def test_fake_clock_fires_timers_in_deadline_order_and_skips_cancelled_ones() -> None:
    clock, fired = FakeClock(), []
    clock.call_at(3.0, lambda: fired.append("c"))
    clock.call_at(1.0, lambda: fired.append("a"))
    clock.call_at(2.0, lambda: fired.append("b")).cancel()
    clock.advance(2.5)
    assert fired == ["a"]
    clock.advance(1.0)
    assert fired == ["a", "c"] and clock.sleepers == 0
