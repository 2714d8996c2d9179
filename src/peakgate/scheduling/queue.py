"""A bounded per-model priority queue of sentence work items (heapq with lazy deletion)."""

from __future__ import annotations

import asyncio
import enum
import heapq
import itertools
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar

from peakgate.backends.base import DecodeOptions
from peakgate.config import PRIORITY_ORDER, PriorityClass
from peakgate.errors import DeadlineExceeded, InputTooLarge, Overloaded, PeakgateError

_CHARS_PER_TOKEN = 4
_MIN_RETRY_AFTER_S = 0.1


class BatchKey(NamedTuple):
    """What must match for sentences to share one backend call."""

    source: str
    target: str
    options: DecodeOptions


class ItemState(enum.Enum):
    NEW = "new"
    QUEUED = "queued"
    RUNNING = "running"
    DROPPED = "dropped"


def estimate_tokens(text: str) -> int:
    """About four characters per subword token: cheap, and close enough for a batch budget."""
    return max(1, -(-len(text) // _CHARS_PER_TOKEN))


def expired_error(item: WorkItem) -> DeadlineExceeded:
    return DeadlineExceeded(f"deadline passed while the sentence was still queued ({item.priority} class)")


def _retrieve_exception(future: asyncio.Future[str]) -> None:
    # Every waiter may already have given up; reading the exception stops asyncio logging it as lost.
    if not future.cancelled():
        future.exception()


@dataclass(eq=False, slots=True)
class WorkItem:
    """One sentence to translate. Compared by identity: one item may serve many coalesced waiters."""

    text: str
    key: BatchKey
    priority: PriorityClass
    deadline: float  # absolute clock time
    enqueued_at: float
    tokens: int
    future: asyncio.Future[str]
    waiters: int = 0
    state: ItemState = ItemState.NEW
    version: int = 0  # bumped by `RequestQueue.promote`; heap entries of older versions are stale

    @classmethod
    def create(cls, text: str, key: BatchKey, priority: PriorityClass, deadline: float, now: float) -> WorkItem:
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        future.add_done_callback(_retrieve_exception)
        return cls(text, key, priority, deadline, now, estimate_tokens(text), future)

    @property
    def rank(self) -> int:
        return PRIORITY_ORDER.index(self.priority)

    def resolve(self, text: str) -> None:
        if not self.future.done():
            self.future.set_result(text)

    def fail(self, error: BaseException) -> None:
        if not self.future.done():
            self.future.set_exception(error)


class _Entry(NamedTuple):
    # Tuple order is the queue order; `seq` is unique, so comparison never reaches the item.
    rank: int
    deadline: float
    seq: int
    version: int
    item: WorkItem


class _DeadlineEntry(NamedTuple):
    deadline: float
    seq: int
    version: int
    item: WorkItem


_E = TypeVar("_E", _Entry, _DeadlineEntry)


def _live(entry: _Entry | _DeadlineEntry) -> bool:
    return entry.item.state is ItemState.QUEUED and entry.version == entry.item.version


def _prune(heap: list[_E]) -> None:
    """Pop stale entries off the top. Taken items are the most urgent, so without this every plan would walk
    past all of them (under a deep backlog, most of the event loop's time)."""
    while heap and not _live(heap[0]):
        heapq.heappop(heap)


def _iter_sorted(heap: list[_E]) -> Iterator[_E]:
    """Live heap entries in order without mutating the heap: O(k log k) for the first k."""
    frontier: list[tuple[_E, int]] = [(heap[0], 0)] if heap else []
    while frontier:
        entry, i = heapq.heappop(frontier)
        if _live(entry):
            yield entry
        for child in (2 * i + 1, 2 * i + 2):
            if child < len(heap):
                heapq.heappush(frontier, (heap[child], child))


@dataclass(eq=False, slots=True)
class QueueGroup:
    """The queued items of one `BatchKey`, in class-then-deadline order."""

    key: BatchKey
    heap: list[_Entry] = field(default_factory=list)
    size: int = 0

    def ordered(self) -> Iterator[WorkItem]:
        return (entry.item for entry in _iter_sorted(self.heap))


class DrainRate:
    """EWMA of backend seconds per sentence; turns a backlog into a retry-after hint."""

    def __init__(self, workers: int = 1, prior_s_per_item: float = 0.01, alpha: float = 0.2) -> None:
        self._workers = max(1, workers)
        self._s_per_item = prior_s_per_item
        self._alpha = alpha

    @property
    def s_per_item(self) -> float:
        return self._s_per_item

    def record(self, items: int, seconds: float) -> None:
        if items > 0 and seconds >= 0:
            self._s_per_item += self._alpha * (seconds / items - self._s_per_item)

    @property
    def items_per_s(self) -> float:
        """Capacity while busy (measured on batch time only, so a quiet period does not read as slowness)."""
        return self._workers / max(self._s_per_item, 1e-6)

    def retry_after_s(self, backlog: int) -> float:
        return max(_MIN_RETRY_AFTER_S, backlog * self._s_per_item / self._workers)


class RequestQueue:
    """Bounded queue for one model. Push and pop are O(log n); removal marks items and heaps skip them."""

    def __init__(
        self,
        model: str,
        max_len: int,
        *,
        workers: int = 1,
        lower_share: float = 1.0,
        on_length: Callable[[int], None] | None = None,
        on_drop: Callable[[str, int], None] | None = None,
    ) -> None:
        self.model = model
        self.drain = DrainRate(workers)
        self._max_len = max_len
        self._lower_share = lower_share
        self._on_length = on_length
        self._on_drop = on_drop  # (reason, count): how many items left without running, and why
        self._groups: dict[BatchKey, QueueGroup] = {}
        self._deadlines: list[_DeadlineEntry] = []
        self._fifo: deque[WorkItem] = deque()  # push order, for the oldest wait
        self._seq = itertools.count()
        self._len = 0
        self.last_top_enqueued_at: float | None = None  # the latest most-urgent-class push, for reservations

    def __len__(self) -> int:
        return self._len

    def groups(self) -> Iterable[QueueGroup]:
        return self._groups.values()

    def by_deadline(self) -> Iterator[WorkItem]:
        return (entry.item for entry in _iter_sorted(self._deadlines))

    def oldest_enqueued_at(self) -> float | None:
        return self._fifo[0].enqueued_at if self._fifo else None

    def ensure_room(self, n: int, rank: int = 0) -> None:
        """Raise `Overloaded` unless `n` more items fit (checked up front so a request is all-or-nothing).

        Classes below the most urgent may fill only `lower_share` of the queue: the rest is headroom that a
        batch flood cannot take from interactive traffic. A request larger than the whole queue can never
        fit, so retrying would be futile: `InputTooLarge`.
        """
        limit = self._max_len if rank == 0 else max(1, int(self._max_len * self._lower_share))
        if n > limit:
            raise InputTooLarge(
                f"request needs {n} sentences queued for model {self.model!r}, more than its queue holds "
                f"for this priority class ({limit}); split it into smaller requests"
            )
        if self._len + n > limit:
            retry = self.drain.retry_after_s(self._len + n - limit)
            raise Overloaded(
                f"model {self.model!r} queue is full ({self._len}/{limit} sentences queued for this class, "
                f"{n} more asked); retry in {retry:.2f}s",
                retry_after_s=retry,
            )

    def push(self, item: WorkItem) -> None:
        self.ensure_room(1, item.rank)
        item.state = ItemState.QUEUED
        group = self._groups.get(item.key)
        if group is None:
            group = self._groups[item.key] = QueueGroup(item.key)
        group.size += 1
        self._len += 1
        self._fifo.append(item)
        if item.rank == 0:
            self.last_top_enqueued_at = item.enqueued_at
        self._index(item, group)
        self._changed()

    def promote(self, item: WorkItem, priority: PriorityClass, deadline: float) -> None:
        """A coalesced waiter joined: serve the item at the most urgent class and the latest deadline."""
        if item.state is not ItemState.QUEUED:
            return
        rank = min(item.rank, PRIORITY_ORDER.index(priority))
        deadline = max(item.deadline, deadline)
        if rank == item.rank and deadline == item.deadline:
            return
        item.priority, item.deadline = PRIORITY_ORDER[rank], deadline
        item.version += 1
        group = self._groups[item.key]
        self._index(item, group)
        self._prune_tops((group,))
        self._maybe_compact()

    def take(self, items: Sequence[WorkItem]) -> None:
        """Planned items leave the queue to run."""
        self._detach(items, ItemState.RUNNING)

    def drop(self, items: Sequence[WorkItem], error: Callable[[WorkItem], PeakgateError], reason: str) -> int:
        """The still-queued ones of `items` leave without running and fail with `error(item)`; returns how many."""
        gone = [item for item in items if item.state is ItemState.QUEUED]
        if not gone:
            return 0
        self._detach(gone, ItemState.DROPPED)
        for item in gone:
            item.fail(error(item))
        if self._on_drop is not None:
            self._on_drop(reason, len(gone))
        return len(gone)

    def drop_all(self, error: Callable[[WorkItem], PeakgateError], reason: str) -> int:
        return self.drop([item for item in self._fifo if item.state is ItemState.QUEUED], error, reason)

    def drop_from(self, rank: int, error: Callable[[WorkItem], PeakgateError], reason: str) -> int:
        """Fail every queued item of class `rank` or less urgent (a shared item carries its most urgent waiter's)."""
        return self.drop([i for i in self._fifo if i.state is ItemState.QUEUED and i.rank >= rank], error, reason)

    def _index(self, item: WorkItem, group: QueueGroup) -> None:
        seq = next(self._seq)
        heapq.heappush(group.heap, _Entry(item.rank, item.deadline, seq, item.version, item))
        heapq.heappush(self._deadlines, _DeadlineEntry(item.deadline, seq, item.version, item))

    def _detach(self, items: Sequence[WorkItem], state: ItemState) -> None:
        touched: dict[BatchKey, QueueGroup] = {}
        for item in items:
            if item.state is not ItemState.QUEUED:
                continue
            item.state = state
            group = touched[item.key] = self._groups[item.key]
            group.size -= 1
            if group.size == 0:
                del self._groups[item.key]
            self._len -= 1
        self._prune_tops(group for group in touched.values() if group.size)
        while self._fifo and self._fifo[0].state is not ItemState.QUEUED:
            self._fifo.popleft()
        self._maybe_compact()
        self._changed()

    def _prune_tops(self, groups: Iterable[QueueGroup]) -> None:
        for group in groups:
            _prune(group.heap)
        _prune(self._deadlines)

    def _maybe_compact(self) -> None:
        # Stale entries only cost iteration time; rebuild once they outnumber live ones (amortised O(1)).
        if len(self._deadlines) <= 2 * self._len + 64:
            return
        self._deadlines = [e for e in self._deadlines if _live(e)]
        heapq.heapify(self._deadlines)
        for group in self._groups.values():
            group.heap = [e for e in group.heap if _live(e)]
            heapq.heapify(group.heap)
        self._fifo = deque(item for item in self._fifo if item.state is ItemState.QUEUED)

    def _changed(self) -> None:
        if self._on_length is not None:
            self._on_length(self._len)
