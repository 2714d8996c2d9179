"""Helpers for the pure policy and forecaster tests: signals on an explicit (fake) clock, and a driver."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from peakgate.control.contract import Decision, Forecast, Policy, PolicyContext, Signals


def sig(at_s: float, *, cpu: float = 0.5, gpu: float | None = None, queue: int = 0, rate: float = 0.0,
        replicas: int = 4, in_flight: int = 0, capacity: float = 0.0) -> Signals:
    return Signals(at_s=at_s, replicas=replicas, cpu_utilisation=cpu, queue_by_class={"interactive": queue},
                   p95_latency_ms=0.0, in_flight=in_flight, request_rate_per_s=rate, gpu_memory_utilisation=gpu,
                   capacity_per_replica_per_s=capacity)


def drive(policy: Policy[Any], readings: Iterable[Signals], *, current: int | None = None,
          forecast: Forecast | None = None, startup_s: float = 0.0) -> list[Decision]:
    """One decision per reading, the state threaded through; `current` defaults to each reading's replicas."""
    state = policy.initial()
    out = []
    for signals in readings:
        ctx = PolicyContext(signals, signals.replicas if current is None else current, forecast, startup_s)
        decision, state = policy.decide(ctx, state)
        out.append(decision)
    return out


def last(policy: Policy[Any], readings: Iterable[Signals], **kwargs: Any) -> Decision:
    return drive(policy, readings, **kwargs)[-1]
