"""Worker heartbeats: what a worker publishes about itself, and the picture gateways build from them.

A heartbeat is a key with a TTL of a few beats, so a killed worker drops out of every gateway's picture by
itself. It carries the worker's readiness (engines loaded and warm, not draining), its measured per-model
capacity and service time (which gateways hand the overload guard, summed over workers: the cluster's drain
rate), what it holds, and its counters (served, expired, malformed, reclaimed) for operators and tests.

For the autoscaler (`peakgate.control`) it also carries the process's CPU utilisation, whether it stands by
(a warm worker: models loaded, not reading the queue until promoted) and when it first served since it began
taking work (decision to first request served, cold start or promotion). Gateways count no standby worker.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable

import msgspec

from peakgate.clock import Clock
from peakgate.errors import BadRequest
from peakgate.scheduling.queue import DrainRate

_log = logging.getLogger(__name__)
BEAT_VERSION = 1
_PRIOR = DrainRate()  # the in-process queue's prior, for a model no worker has measured yet


class ModelLoad(msgspec.Struct, frozen=True):
    capacity_per_s: float
    s_per_item: float
    oldest_wait_s: float


class Counts(msgspec.Struct):
    served: int = 0  # entries answered with translations
    failed: int = 0  # entries answered with an error
    expired: int = 0  # entries read past their deadline: acknowledged and failed, not run
    malformed: int = 0  # unreadable entries: acknowledged, logged, dropped
    reclaimed: int = 0  # entries taken over from a worker presumed dead


class Heartbeat(msgspec.Struct, frozen=True, kw_only=True):
    v: int = BEAT_VERSION
    worker: str
    pid: int
    ready: bool
    draining: bool = False
    error: str | None = None  # why it is not ready (a model that failed to load)
    models: dict[str, ModelLoad]
    held: int  # segments read and not yet answered
    hold_limit: int
    counts: Counts
    at_wall_s: float
    warm: bool = False  # started standing by (the warm pool): follows its serve flag, promoted or not
    standby: bool = False  # models loaded and ready, not reading the queue (a warm worker not promoted)
    cpu_utilisation: float = 0.0  # the process's CPU seconds per second since its previous beat (one core = 1)
    first_served_wall_s: float | None = None  # first entry served since it began taking work (start or promotion)


_ENCODER = msgspec.msgpack.Encoder()
_DECODER = msgspec.msgpack.Decoder(Heartbeat)


def encode_beat(beat: Heartbeat) -> bytes:
    return _ENCODER.encode(beat)


def decode_beat(payload: bytes) -> Heartbeat:
    try:
        beat = _DECODER.decode(payload)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise BadRequest(f"malformed heartbeat: {exc}") from exc
    if beat.v != BEAT_VERSION:
        raise BadRequest(f"heartbeat has schema v{beat.v}; this gateway reads v{BEAT_VERSION}")
    return beat


class ClusterView:
    """The ready workers per model, as of the last poll."""

    def __init__(self) -> None:
        self._ready: dict[str, list[ModelLoad]] = {}

    def update(self, payloads: Iterable[bytes]) -> None:
        ready: dict[str, list[ModelLoad]] = {}
        for payload in payloads:
            try:
                beat = decode_beat(payload)
            except BadRequest as exc:
                _log.warning("ignoring a worker heartbeat: %s", exc.message)
                continue
            if beat.ready and not beat.draining and not beat.standby:
                for model, load in beat.models.items():
                    ready.setdefault(model, []).append(load)
        self._ready = ready

    def ready_workers(self, model: str) -> int:
        return len(self._ready.get(model, ()))

    def capacity_per_s(self, model: str) -> float:
        """All ready workers' sentences per second for `model` (0 with none)."""
        return sum(load.capacity_per_s for load in self._ready.get(model, ()))

    def s_per_item(self, model: str) -> float:
        """One worker's engine seconds per sentence, averaged over the ready ones."""
        loads = self._ready.get(model)
        if not loads:
            return _PRIOR.s_per_item
        return sum(load.s_per_item for load in loads) / len(loads)


def _process_cpu_s() -> float:
    times = os.times()
    return times.user + times.system


class CpuMeter:
    """The process's CPU utilisation between two readings: its user and system CPU seconds over the elapsed
    clock seconds (engine threads count; an engine's own subprocess, Apertium's pipeline, does not)."""

    def __init__(self, clock: Clock, cpu_s: Callable[[], float] = _process_cpu_s) -> None:
        self._clock = clock
        self._cpu_s = cpu_s
        self._last = (clock.now(), cpu_s())

    def read(self) -> float:
        now, cpu = self._clock.now(), self._cpu_s()
        (then, before), self._last = self._last, (now, cpu)
        return (cpu - before) / (now - then) if now > then else 0.0
