"""A Knative-KPA-style concurrency policy, pure, after knative/serving pkg/autoscaler/scaling/autoscaler.go.

Observed concurrency (requests in flight plus those queued) is averaged over a stable window (60 s) and a panic
window (6 s); each average gives a desired count, ceil(concurrency / target per replica), kept within
[ready / max_scale_down_rate, ready * max_scale_up_rate]. Panic starts when the panic window's desired count is
at least `panic_threshold` times the ready replicas (200 %); every tick still over it moves the panic time on,
and panic ends once a full stable window has passed since then. While panicking the larger of the two desired
counts is used and the count never goes down.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.contract import Decision, PolicyContext


class KpaConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["kpa"] = "kpa"
    tick_s: float = Field(default=2.0, gt=0)  # Knative's autoscaler ticks every 2 s
    # Knative aims at 70 % of what a pod can hold. A worker's concurrency is not linear in its load: its batches
    # grow with it (cpu-int8 profile: a stream at 70 % of its top rate runs batches of ~5, at 95 % of ~22), so
    # the target is the concurrency at 70 % of the measured rate: 2 streams x ~5.
    target_concurrency: float = Field(default=10.0, gt=0)
    stable_window_s: float = Field(default=60.0, gt=0)
    panic_window_s: float = Field(default=6.0, gt=0)
    panic_threshold: float = Field(default=2.0, gt=0)  # 200 %: the panic window's desired vs ready replicas
    max_scale_up_rate: float = Field(default=1000.0, ge=1)
    max_scale_down_rate: float = Field(default=2.0, ge=1)


@dataclass(frozen=True, slots=True)
class KpaState:
    samples: tuple[tuple[float, float], ...] = ()  # (at_s, concurrency) within the stable window
    panic_since_s: float | None = None  # Knative's panicTime: the last tick over the panic threshold
    max_panic_replicas: int = 0


class KpaPolicy:
    def __init__(self, config: KpaConfig) -> None:
        self.c = config

    def initial(self) -> KpaState:
        return KpaState()

    def decide(self, ctx: PolicyContext, state: KpaState) -> tuple[Decision, KpaState]:
        c, now = self.c, ctx.signals.at_s
        observed = float(ctx.signals.in_flight + ctx.signals.queue_length)
        samples = (*(s for s in state.samples if s[0] > now - c.stable_window_s), (now, observed))
        stable = _mean(v for t, v in samples)
        panic = _mean(v for t, v in samples if t > now - c.panic_window_s)
        ready = max(1, ctx.signals.replicas)
        up, down = math.ceil(c.max_scale_up_rate * ready), math.floor(ready / c.max_scale_down_rate)
        stable_want = min(max(math.ceil(stable / c.target_concurrency), down), up)
        panic_want = min(max(math.ceil(panic / c.target_concurrency), down), up)
        over = math.ceil(panic / c.target_concurrency) / ready >= c.panic_threshold
        panic_since = state.panic_since_s
        if over:
            panic_since = now
        elif panic_since is not None and panic_since + c.stable_window_s < now:
            panic_since = None
        if panic_since is None:
            reason = f"stable: concurrency {stable:.1f} / {c.target_concurrency:g} -> {stable_want}"
            return Decision(stable_want, reason, rule="stable"), KpaState(samples)
        peak = max(state.max_panic_replicas, stable_want, panic_want)
        reason = (f"panic: concurrency {panic:.1f} over {c.panic_window_s:g} s on {ready} ready -> {peak}"
                  f" (no scale-down while panicking)")
        return Decision(peak, reason, rule="panic"), KpaState(samples, panic_since, peak)


def _mean(values: Iterable[float]) -> float:
    items = list(values)
    return sum(items) / len(items) if items else 0.0
