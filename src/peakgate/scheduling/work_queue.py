"""The work queue the service submits to, behind one protocol, and the factory keyed by `queue.backend`.

The protocol is exactly what `Service` (and, through it, the router, the overload guard and the job runner)
uses of the in-process `Scheduler`, which implements it unchanged: the embedded default. `"redis"` builds the
gateway half of the scale-out queue (`peakgate.scaleout.gateway`), whose work `peakgate worker` processes run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from peakgate.backends.base import Backend, Health
from peakgate.clock import Clock
from peakgate.config import PriorityClass, Settings
from peakgate.errors import PeakgateError
from peakgate.observe.metrics import Metrics
from peakgate.resilience.breaker import Breakers
from peakgate.resilience.settings import ConcurrencyConfig
from peakgate.scheduling.scheduler import Scheduler


class WorkQueue(Protocol):
    async def start(self) -> None: ...

    async def close(self) -> None:
        """Stop; whatever is still waiting fails with `Unavailable` (nothing is dropped silently)."""

    async def submit(  # noqa: PLR0917 - the scheduler's signature
        self, model: str, segments: Sequence[str], source: str, target: str, priority: PriorityClass,
        deadline: float, split_sentences: bool = True, *, beam_cap: int | None = None,
    ) -> list[str]:
        """Translate `segments` in order before `deadline` (absolute `Clock` time), or raise from the tree."""
        ...

    def shed_queued(self, priority: PriorityClass, error: Callable[[object], PeakgateError],
                    drain_per_s: float | None = None) -> int:
        """Fail queued work of `priority` (and below when starved) at once; returns how many were failed."""
        ...

    def urgent_backlog(self, window_s: float) -> bool:
        """Work is queued and interactive traffic arrived in the last `window_s`."""
        ...

    def service_time_s(self, model: str, segments: int) -> float:
        """Engine time for `segments` (one worker's share)."""
        ...

    def capacity_per_s(self, model: str) -> float:
        """Sentences per second `model` completes while busy, all its workers together."""
        ...

    def oldest_wait_s(self, model: str) -> float:
        """How long the oldest unfinished work for `model` has waited (the router's load signal)."""
        ...


@runtime_checkable
class RemoteWorkers(Protocol):
    """A queue whose engines run in other processes: it, not this process's engines, says what is up."""

    def health(self, model: str) -> Health:
        """DOWN while the queue is out of reach or no worker is ready for `model`."""
        ...


def needs_local_engines(settings: Settings) -> bool:
    """The gateway loads engines of its own only where it runs work itself: in-process, or as Redis's fallback."""
    return settings.queue.backend == "inprocess" or settings.queue.fallback == "local"


def build_work_queue(
    settings: Settings, backends: Mapping[str, Backend], clock: Clock, metrics: Metrics,
    workers: Mapping[str, int], *, breakers: Breakers | None = None, limits: ConcurrencyConfig | None = None,
) -> WorkQueue:
    """The queue `settings.queue.backend` names, over this process's `backends` (run here in-process; with
    Redis, run here only as the configured local fallback)."""

    def local() -> Scheduler:
        return Scheduler(backends, settings.batcher, settings.classes, clock, metrics, workers,
                         breakers=breakers, limits=limits)

    match settings.queue.backend:
        case "inprocess":
            return local()
        case "redis":
            from peakgate.scaleout.gateway import RedisWorkQueue  # Redis only where it is configured

            fallback = local() if settings.queue.fallback == "local" else None
            return RedisWorkQueue.from_settings(settings, clock, metrics, fallback=fallback)
