"""The outbox: one flush per round trip, whatever arrived meanwhile."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from peakgate.scaleout.outbox import Outbox
from peakgate.scaleout.transport import QueueUnreachable


class Wire:
    def __init__(self) -> None:
        self.flushes: list[list[int]] = []
        self.gate = asyncio.Event()
        self.fail_next = False

    async def flush(self, items: Sequence[int]) -> None:
        self.flushes.append(list(items))
        await self.gate.wait()
        if self.fail_next:
            self.fail_next = False
            raise QueueUnreachable("down")


async def test_items_sent_while_a_flush_is_on_the_wire_go_together_in_the_next() -> None:
    wire = Wire()
    outbox = Outbox(wire.flush)
    first = asyncio.create_task(outbox.send(1))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    rest = [asyncio.create_task(outbox.send(n)) for n in (2, 3, 4)]
    await asyncio.sleep(0)
    wire.gate.set()
    await asyncio.gather(first, *rest)
    assert wire.flushes == [[1], [2, 3, 4]]
    await outbox.close()


async def test_a_failed_flush_fails_its_senders_only() -> None:
    wire = Wire()
    wire.fail_next = True
    outbox = Outbox(wire.flush)
    doomed = asyncio.create_task(outbox.send(1))
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    later = asyncio.create_task(outbox.send(2))
    await asyncio.sleep(0)
    wire.gate.set()
    with pytest.raises(QueueUnreachable):
        await doomed
    await later
    assert wire.flushes == [[1], [2]]
