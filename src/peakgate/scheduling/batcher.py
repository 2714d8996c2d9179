"""Pure batch planning: from a queue snapshot and the time, decide what runs next. No I/O, no clock, no mutation.

Policy (Triton-style dynamic batching, one `BatchKey` per batch):
- items fill a batch in class-then-deadline order, up to `max_batch_size` (the smaller of the config's and
  the engine's) and `max_batch_tokens` (a single over-budget item still runs alone);
- a batch goes at once when a preferred size can be formed (the largest one that fits) or when it is full,
  otherwise once its oldest item has waited `max_queue_delay_ms`;
- among ready batches the most urgent head wins; a ready batch of a lower class is held back while a more
  urgent class is pending, which costs at most `max_queue_delay_ms`;
- items whose deadline has passed are never planned; the plan lists them for the executor to drop;
- a worker reserved for urgent work plans with `max_rank`: only items of that class or more urgent;
- a batch headed by the most urgent class goes at once when others wait behind it; it carries lower-class
  sentences only as riders, up to `urgent_fill_batch_size` and none longer than its own longest (a longer
  one would make every interactive sentence wait for more decode steps). A reserved worker takes riders too.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal, Protocol

from peakgate.backends.base import CostModel
from peakgate.config import BatcherConfig
from peakgate.scheduling.queue import BatchKey, WorkItem

Trigger = Literal["preferred", "full", "delay"]
_RIDER_SCAN = 64  # lower-class items looked at for riders: keeps a plan O(batch) behind a deep backlog


class GroupView(Protocol):
    """Queued items sharing one `BatchKey`."""

    @property
    def key(self) -> BatchKey: ...

    def ordered(self) -> Iterator[WorkItem]:
        """Items in class-then-deadline order (lazily)."""
        ...


class QueueView(Protocol):
    """What the planner reads from a queue (`RequestQueue` implements it)."""

    def groups(self) -> Iterable[GroupView]: ...

    def by_deadline(self) -> Iterator[WorkItem]:
        """Every queued item, earliest deadline first (lazily)."""
        ...


@dataclass(frozen=True, slots=True)
class Limits:
    """The effective knobs for one model: config capped by what the engine reports."""

    max_size: int
    max_tokens: int
    preferred: tuple[int, ...]  # ascending, each <= max_size
    delay_s: float
    urgent_fill: int = 0  # total size an interactive batch may be topped up to with shorter lower-class items

    @classmethod
    def of(cls, config: BatcherConfig, cost: CostModel) -> Limits:
        max_size = max(1, min(config.max_batch_size, cost.max_batch_size))
        sizes = {*config.preferred_batch_sizes, *cost.preferred_batch_sizes}
        preferred = tuple(sorted(s for s in sizes if 0 < s <= max_size))
        return cls(max_size, max(1, config.max_batch_tokens), preferred, config.max_queue_delay_ms / 1000.0,
                   min(max_size, config.urgent_fill_batch_size))


@dataclass(frozen=True, slots=True)
class BatchPlan:
    """Run `items` (all sharing `key`) now; drop `expired` first."""

    key: BatchKey
    items: tuple[WorkItem, ...]
    trigger: Trigger
    expired: tuple[WorkItem, ...] = ()


@dataclass(frozen=True, slots=True)
class Wait:
    """Nothing to run: sleep until `until` (None: until new work arrives); drop `expired` first."""

    until: float | None
    expired: tuple[WorkItem, ...] = ()


@dataclass(frozen=True, slots=True)
class _Pending:
    head: WorkItem
    ready_at: float


def plan(
    queue: QueueView, now: float, config: BatcherConfig, cost: CostModel, *, max_rank: int | None = None,
    lower_cap: int | None = None,
) -> BatchPlan | Wait:
    """`lower_cap`: the most items a batch of a lower class may hold (while interactive traffic is recent, so
    a worker busy with batch work frees up quickly for it)."""
    expired, next_deadline = _expired(queue, now)
    limits = Limits.of(config, cost)
    ready: list[BatchPlan] = []
    pending: list[_Pending] = []
    for group in queue.groups():
        candidate = _candidate(group, now, limits, max_rank, lower_cap)
        if isinstance(candidate, BatchPlan):
            ready.append(candidate)
        elif candidate is not None:
            pending.append(candidate)
    chosen = _choose(ready, pending)
    if chosen is not None:
        return dataclasses.replace(chosen, expired=expired)
    wakes = [p.ready_at for p in pending]
    if next_deadline is not None:
        wakes.append(next_deadline)  # wake to drop it on time, freeing its slot
    return Wait(min(wakes, default=None), expired)


def _expired(queue: QueueView, now: float) -> tuple[tuple[WorkItem, ...], float | None]:
    """Items at or past their deadline, and the next deadline still ahead."""
    gone: list[WorkItem] = []
    for item in queue.by_deadline():
        if item.deadline > now:
            return tuple(gone), item.deadline
        gone.append(item)
    return tuple(gone), None


def _candidate(
    group: GroupView, now: float, limits: Limits, max_rank: int | None, lower_cap: int | None
) -> BatchPlan | _Pending | None:
    items, full = _fill(group.ordered(), now, limits, max_rank, lower_cap)
    if not items:
        return None
    size = max((s for s in limits.preferred if s <= len(items)), default=0)
    if size:
        return BatchPlan(group.key, tuple(items[:size]), "preferred")
    if full:
        return BatchPlan(group.key, tuple(items), "full")
    ready_at = min(item.enqueued_at for item in items) + limits.delay_s
    if now >= ready_at:
        return BatchPlan(group.key, tuple(items), "delay")
    return _Pending(items[0], ready_at)


def _fill(
    items: Iterator[WorkItem], now: float, limits: Limits, max_rank: int | None, lower_cap: int | None
) -> tuple[list[WorkItem], bool]:
    """Take live items in order until the size cap or token budget; also say whether more were left over."""
    batch: list[WorkItem] = []
    tokens = 0
    for item in items:
        if batch and batch[0].rank == 0 and item.rank > 0:
            riders = itertools.chain((item,), items)
            return _ride_along(batch, tokens, riders, now=now, limits=limits), True  # goes at once: others wait
        if max_rank is not None and item.rank > max_rank:
            break  # items come class first: the rest are all less urgent
        if lower_cap is not None and batch and batch[0].rank > 0 and len(batch) >= lower_cap:
            return batch, True
        if item.deadline <= now:
            continue
        if len(batch) == limits.max_size or (batch and tokens + item.tokens > limits.max_tokens):
            return batch, True
        batch.append(item)
        tokens += item.tokens
    return batch, False


def _ride_along(batch: list[WorkItem], tokens: int, rest: Iterator[WorkItem], *, now: float,
                limits: Limits) -> list[WorkItem]:
    """Top an interactive batch up with lower-class items no longer than its longest (a bounded scan)."""
    longest = max(item.tokens for item in batch)
    for item in itertools.islice(rest, _RIDER_SCAN):
        if len(batch) >= limits.urgent_fill:
            break
        if item.deadline > now and item.tokens <= longest and tokens + item.tokens <= limits.max_tokens:
            batch.append(item)
            tokens += item.tokens
    return batch


def _urgency(item: WorkItem) -> tuple[int, float, float]:
    return item.rank, item.deadline, item.enqueued_at


def _choose(ready: list[BatchPlan], pending: list[_Pending]) -> BatchPlan | None:
    if not ready:
        return None
    best = min(ready, key=lambda b: _urgency(b.items[0]))
    if pending and min(p.head.rank for p in pending) < best.items[0].rank:
        return None  # a more urgent class becomes ready within max_queue_delay: keep the worker for it
    return best
