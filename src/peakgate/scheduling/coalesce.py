"""Request coalescing: identical in-flight sentences run once and every waiter gets the one result.

Identical means the same `BatchKey` (pair and decode options) and the same text after `normalize`. The engine
is always given the normalized text, so sharing a result never changes what any caller gets back.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from peakgate.config import PRIORITY_ORDER, PriorityClass
from peakgate.errors import Rejected
from peakgate.observe.metrics import Metrics
from peakgate.scheduling.queue import BatchKey, ItemState, RequestQueue, WorkItem, expired_error

_Slot = tuple[BatchKey, str]


def normalize(text: str) -> str:
    """NFC without outer whitespace: canonically equal texts translate the same, so they may share a result."""
    return unicodedata.normalize("NFC", text).strip()


def _abandoned_error(item: WorkItem) -> Rejected:
    return Rejected("every request waiting for this sentence gave up before it ran")


class Coalescer:
    """One model's in-flight items by slot, plus how many requests wait on each."""

    def __init__(self, queue: RequestQueue, metrics: Metrics) -> None:
        self._queue = queue
        self._coalesced = metrics.coalesced.labels(queue.model)
        self._inflight: dict[_Slot, WorkItem] = {}

    def __len__(self) -> int:
        return len(self._inflight)

    def acquire(
        self, texts: Sequence[str], key: BatchKey, priority: PriorityClass, deadline: float, now: float
    ) -> list[WorkItem]:
        """One item per text (normalized already), shared where possible; all-or-nothing.

        Raises `Overloaded` before touching anything when the new items do not fit in the queue.
        """
        items: dict[str, WorkItem] = {}
        fresh: list[str] = []
        rank = PRIORITY_ORDER.index(priority)
        for text in dict.fromkeys(texts):
            live = self._live((key, text))
            # A queued item is promoted to the joiner's class, a running one cannot be: sharing a less urgent
            # batch already running (perhaps on a low-priority bulk replica) would make this request wait for it.
            if live is None or (live.state is ItemState.RUNNING and live.rank > rank):
                fresh.append(text)
            else:
                items[text] = live
        self._queue.ensure_room(len(fresh), rank)
        for text in fresh:
            items[text] = self._enqueue(WorkItem.create(text, key, priority, deadline, now))
        for item in items.values():
            item.waiters += 1
            self._queue.promote(item, priority, deadline)  # a no-op for the fresh ones
        if shared := len(texts) - len(fresh):
            self._coalesced.inc(shared)
        return [items[text] for text in texts]

    def release(self, items: Sequence[WorkItem], now: float) -> None:
        """A request is done with its items; queued ones nobody waits for any more leave without running.

        Only queued items are dropped: a running batch is never cut short, and a cancelled waiter never
        touches a result other requests still wait for.
        """
        unwanted: list[WorkItem] = []
        for item in dict.fromkeys(items):
            item.waiters -= 1
            if item.waiters == 0 and item.state is ItemState.QUEUED:
                unwanted.append(item)
        self._queue.drop([i for i in unwanted if i.deadline <= now], expired_error, "deadline")
        self._queue.drop([i for i in unwanted if i.deadline > now], _abandoned_error, "abandoned")

    def _live(self, slot: _Slot) -> WorkItem | None:
        # A done item may linger until its done-callback runs; it has nothing left to share.
        item = self._inflight.get(slot)
        return item if item is not None and not item.future.done() else None

    def _enqueue(self, item: WorkItem) -> WorkItem:
        slot = (item.key, item.text)
        self._queue.push(item)
        self._inflight[slot] = item
        item.future.add_done_callback(lambda _: self._forget(slot, item))
        return item

    def _forget(self, slot: _Slot, item: WorkItem) -> None:
        if self._inflight.get(slot) is item:
            del self._inflight[slot]
