"""The Redis key layout of the scale-out queue, in one place (gateways and workers must agree on it)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from peakgate.config import PRIORITY_ORDER, PriorityClass


@dataclass(frozen=True, slots=True)
class Keys:
    prefix: str

    def work(self, model: str, priority: PriorityClass) -> str:
        """The stream of `model`'s work of one class: workers read the more critical streams first."""
        return f"{self.prefix}:q:{model}:{priority}"

    def reply(self, gateway: str) -> str:
        """The stream a gateway reads its answers from."""
        return f"{self.prefix}:r:{gateway}"

    def heartbeat(self, worker: str) -> str:
        return f"{self.prefix}:w:{worker}"

    def serve_flag(self, worker: str) -> str:
        """Set: the standby (warm) worker `worker` takes work; cleared: it stands by again (the autoscaler's)."""
        return f"{self.prefix}:serve:{worker}"

    @property
    def heartbeats(self) -> str:
        """A SCAN pattern matching every worker's heartbeat key."""
        return f"{self.prefix}:w:*"

    def work_by_class(self, models: Iterable[str]) -> list[list[str]]:
        """Every class's streams of `models`, most critical class first."""
        names = list(models)
        return [[self.work(model, priority) for model in names] for priority in PRIORITY_ORDER]
