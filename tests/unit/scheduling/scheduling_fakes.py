"""Test doubles for the scheduling tests: a scriptable backend and helpers that drive a FakeClock."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from peakgate.backends.base import CostModel, DecodeOptions, Health
from peakgate.clock import FakeClock
from peakgate.config import PRIORITY_ORDER, BatcherConfig, ClassConfig, PriorityClass
from peakgate.observe.metrics import Metrics
from peakgate.scheduling import Scheduler

MODEL = "fake"
# Distinct beam sizes per class so each class gets its own BatchKey unless a test says otherwise.
CLASSES: dict[PriorityClass, ClassConfig] = {
    "interactive": ClassConfig(deadline_ms=3_000, beam_size=1),
    "document": ClassConfig(deadline_ms=30_000, beam_size=2),
    "batch": ClassConfig(deadline_ms=300_000, beam_size=3),
}


async def settle(rounds: int = 50) -> None:
    """Let every ready task run (zero-length sleeps only yield to the loop; no wall time passes)."""
    for _ in range(rounds):
        await asyncio.sleep(0)


async def advance(clock: FakeClock, seconds: float) -> None:
    clock.advance(seconds)
    await settle()


@dataclass(frozen=True, slots=True)
class Call:
    segments: tuple[str, ...]
    source: str
    target: str
    options: DecodeOptions


class FakeBackend:
    """Records every batch. `gate` (when set) holds each call until released; `fail` makes calls raise it."""

    def __init__(self, *, max_batch_size: int = 64, preferred: tuple[int, ...] = (), bulk_slots: int = 0) -> None:
        self.calls: list[Call] = []
        self.gate: asyncio.Event | None = None
        self.fail: Exception | None = None
        self.fail_target: str | None = None  # fail only batches into this language
        self.short_by = 0  # return this many fewer outputs than inputs
        self._cost = CostModel(max_batch_size, preferred, warm=True, bulk_slots=bulk_slots)

    @property
    def name(self) -> str:
        return MODEL

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        return frozenset({("en", "es")})

    async def start(self) -> None:
        return None

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        self.calls.append(Call(tuple(segments), source, target, options))
        if self.gate is not None:
            await self.gate.wait()
        if self.fail is not None and self.fail_target in (None, target):
            raise self.fail
        outputs = [f"<{s}>" for s in segments]
        return outputs[: len(outputs) - self.short_by]

    def cost_model(self) -> CostModel:
        return self._cost

    def health(self) -> Health:
        return Health.OK

    async def close(self) -> None:
        return None

    def hold(self) -> asyncio.Event:
        """Block every call from now on until the returned event is set (a stuck engine if never set)."""
        self.gate = asyncio.Event()
        return self.gate

    @property
    def segments(self) -> list[str]:
        return [s for call in self.calls for s in call.segments]


class Harness:
    """A started Scheduler on a FakeClock with one FakeBackend; defaults batch on the delay alone and hand the
    backend no batches ahead (the fake runs every call it gets at once; a real engine queues lookahead ones)."""

    def __init__(
        self,
        batcher: BatcherConfig | None = None,
        *,
        backend: FakeBackend | None = None,
        concurrency: int = 1,
        batch_timeout_s: float | None = None,
        classes: dict[PriorityClass, ClassConfig] | None = None,
    ) -> None:
        self.clock = FakeClock(start=1_000.0)
        self.metrics = Metrics()
        self.backend = backend or FakeBackend()
        self.batcher = batcher or BatcherConfig(preferred_batch_sizes=(), max_queue_delay_ms=5.0, lookahead_batches=0)
        self.scheduler = Scheduler(
            {MODEL: self.backend}, self.batcher, classes or CLASSES, self.clock, self.metrics, concurrency,
            batch_timeout_s=batch_timeout_s,
        )

    def submit(
        self,
        *segments: str,
        priority: PriorityClass = "interactive",
        within: float = 10.0,
        target: str = "es",
        split: bool = True,
    ) -> asyncio.Task[list[str]]:
        """Start a request as a task; `within` is its deadline relative to now."""
        deadline = self.clock.now() + within
        return asyncio.create_task(
            self.scheduler.submit(MODEL, segments, "en", target, priority, deadline, split_sentences=split)
        )

    async def flush(self) -> None:
        """Advance past the batching delay so every pending partial batch runs."""
        await advance(self.clock, self.batcher.max_queue_delay_ms / 1000.0)

    def sample(self, name: str, **labels: str) -> float:
        value = self.metrics.registry.get_sample_value(name, {"model": MODEL, **labels})
        return value or 0.0


def rank_of(priority: PriorityClass) -> int:
    return PRIORITY_ORDER.index(priority)
