"""One frozen `Signals` snapshot per tick, from what gateways and workers already publish (never private state):

- the shared queue: entries waiting per class, summed over the models' streams `{prefix}:q:{model}:{class}`;
- the workers' heartbeats: serving replicas (ready, not draining, not standing by), their mean CPU utilisation
  and measured capacity;
- the gateways' `/metrics`: request rate, p95 latency and requests in flight (`signals_prom`);
- NVML, when it sees a GPU: the fullest GPU's memory utilisation (`signals_gpu`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol

from peakgate.clock import Clock
from peakgate.config import PRIORITY_ORDER, PriorityClass
from peakgate.control.contract import Signals
from peakgate.control.signals_gpu import GpuProbe
from peakgate.control.signals_prom import GatewayFigures
from peakgate.scaleout.cluster import Heartbeat
from peakgate.scaleout.keys import Keys


class SignalSource(Protocol):
    async def snapshot(self) -> Signals: ...


class QueueReader(Protocol):
    async def waiting(self, streams: Sequence[str]) -> Mapping[str, int]: ...

    async def heartbeats(self) -> list[Heartbeat]: ...


class GatewayReader(Protocol):
    async def read(self, at_s: float) -> GatewayFigures: ...


def serving(beats: Iterable[Heartbeat]) -> list[Heartbeat]:
    """The workers taking work: ready, not draining, not standing by."""
    return [beat for beat in beats if beat.ready and not beat.draining and not beat.standby]


def class_streams(prefix: str, models: Iterable[str]) -> dict[PriorityClass, list[str]]:
    """Each class's work streams over `models`."""
    by_class = Keys(prefix).work_by_class(models)
    return dict(zip(PRIORITY_ORDER, by_class, strict=True))


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values) if values else 0.0


class ClusterSignals:
    def __init__(self, *, queue: QueueReader, gateways: GatewayReader, gpu: GpuProbe,
                 streams: Mapping[PriorityClass, Sequence[str]], clock: Clock) -> None:
        self._queue = queue
        self._gateways = gateways
        self._gpu = gpu
        self._streams = {priority: list(names) for priority, names in streams.items()}
        self._clock = clock

    async def snapshot(self) -> Signals:
        """Raises `QueueUnreachable` when the queue cannot be read; a silent gateway is left out."""
        at_s = self._clock.now()
        every = [stream for names in self._streams.values() for stream in names]
        waiting, beats, figures = await asyncio.gather(
            self._queue.waiting(every), self._queue.heartbeats(), self._gateways.read(at_s))
        replicas = serving(beats)
        return Signals(
            at_s=at_s, replicas=len(replicas),
            cpu_utilisation=_mean([min(1.0, beat.cpu_utilisation) for beat in replicas]),
            queue_by_class={p: sum(waiting.get(s, 0) for s in names) for p, names in self._streams.items()},
            p95_latency_ms=figures.p95_latency_ms, in_flight=figures.in_flight,
            request_rate_per_s=figures.request_rate_per_s, gpu_memory_utilisation=self._gpu.memory_utilisation(),
            capacity_per_replica_per_s=_mean([sum(m.capacity_per_s for m in b.models.values()) for b in replicas]),
            engine_chars_by_key=figures.engine_chars_by_key,
        )
