"""Waiting bounded by the injected Clock (asyncio's own timeouts use loop time, which a FakeClock can't drive).

Both waits park on one future woken by done-callbacks and one clock timer: no timer task and no
`asyncio.wait` per request, which cost ~20 us of a served request's CPU.
"""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from typing import Any, TypeVar

from peakgate.clock import Clock
from peakgate.errors import DeadlineExceeded

_T = TypeVar("_T")


async def _park(futures: Collection[asyncio.Future[Any]], clock: Clock, until: float | None, *, first: bool) -> None:
    """Return when the clock reaches `until`, or when one (`first`) / all of `futures` are done; all of them
    stop waiting at the first failure either way."""
    pending = [f for f in futures if not f.done()]
    if not pending:
        return
    waiter: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    left = len(pending)

    def wake() -> None:
        if not waiter.done():
            waiter.set_result(None)

    def on_done(future: asyncio.Future[Any]) -> None:
        nonlocal left
        left -= 1
        if first or not left or future.cancelled() or future.exception() is not None:
            wake()

    for future in pending:
        future.add_done_callback(on_done)
    timer = clock.call_at(until, wake) if until is not None else None
    try:
        await waiter
    finally:
        if timer is not None:
            timer.cancel()
        for future in pending:
            future.remove_done_callback(on_done)


async def wait_any(futures: Collection[asyncio.Future[Any]], clock: Clock, until: float | None) -> None:
    """Return once one of `futures` is done or the clock reaches `until` (None: no time limit)."""
    await _park(futures, clock, until, first=True)


async def gather_until(futures: Sequence[asyncio.Future[_T]], clock: Clock, deadline: float) -> list[_T]:
    """Every result in order. The first failure, or the clock reaching `deadline`, raises.

    Never cancels `futures`: they may be shared with other waiters (coalescing).
    """
    _raise_failure(futures)
    await _park(futures, clock, deadline, first=False)
    _raise_failure(futures)
    if left := sum(1 for f in futures if not f.done()):
        raise DeadlineExceeded(f"deadline passed with {left} of {len(futures)} sentences still untranslated")
    return [f.result() for f in futures]


def _raise_failure(futures: Sequence[asyncio.Future[Any]]) -> None:
    for future in futures:
        if future.done() and not future.cancelled() and (exc := future.exception()) is not None:
            raise exc
