"""Waiting bounded by the injected Clock (asyncio's own timeouts use loop time, which a FakeClock can't drive)."""

from __future__ import annotations

import asyncio
from collections.abc import Collection, Sequence
from typing import Any, TypeVar

from peakgate.clock import Clock
from peakgate.errors import DeadlineExceeded

_T = TypeVar("_T")


def _timer(clock: Clock, until: float) -> asyncio.Task[None]:
    return asyncio.create_task(clock.sleep(until - clock.now()))


async def wait_any(futures: Collection[asyncio.Future[Any]], clock: Clock, until: float | None) -> None:
    """Return once one of `futures` is done or the clock reaches `until` (None: no time limit)."""
    timer = _timer(clock, until) if until is not None else None
    waiting: set[asyncio.Future[Any]] = set(futures)
    if timer is not None:
        waiting.add(timer)
    try:
        await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if timer is not None:
            timer.cancel()


async def gather_until(futures: Sequence[asyncio.Future[_T]], clock: Clock, deadline: float) -> list[_T]:
    """Every result in order. The first failure, or the clock reaching `deadline`, raises.

    Never cancels `futures`: they may be shared with other waiters (coalescing).
    """
    timer = _timer(clock, deadline)
    pending: set[asyncio.Future[Any]] = {f for f in futures if not f.done()}
    try:
        _raise_failure(futures)
        while pending:
            done, _ = await asyncio.wait(pending | {timer}, return_when=asyncio.FIRST_COMPLETED)
            _raise_failure([f for f in done if f is not timer])
            pending -= done
            if pending and timer.done():
                raise DeadlineExceeded(
                    f"deadline passed with {len(pending)} of {len(futures)} sentences still untranslated"
                )
    finally:
        timer.cancel()
    return [f.result() for f in futures]


def _raise_failure(futures: Sequence[asyncio.Future[Any]]) -> None:
    for future in futures:
        if future.done() and not future.cancelled() and (exc := future.exception()) is not None:
            raise exc
