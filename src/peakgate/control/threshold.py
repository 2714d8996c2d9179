"""The seed's multi-level threshold policy (its defaults exactly), pure: `(context, state) -> (decision, state)`.

Each level watches one metric. It fires when the metric met its threshold on consecutive readings that span at
least `for_s` and number at least `periods` (one reading per tick), and at least `cooldown_s` has passed since
that level last fired. Scale-out levels fire on `>=`, the scale-in level on `<`. When several scale-out levels
fire in one tick the largest step wins (declaration order breaks ties) and only it starts its cooldown; the
others may fire on the next tick. Scale-in waits while any scale-out condition is met, cooling down or not.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.contract import Decision, PolicyContext, Signals

SCALE_OUT = ("cpu", "gpu_memory", "queue", "requests")  # the order ties are broken in


class Level(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    threshold: float
    for_s: float = Field(default=0.0, ge=0)  # readings meeting it must span this long (0: the first one fires)
    periods: int = Field(default=1, ge=1)  # ... and number at least this many consecutive readings
    step: int = Field(ge=1)  # replicas added (scale-out levels) or removed (scale_in)
    cooldown_s: float = Field(default=0.0, ge=0)  # since this level last fired


class ThresholdConfig(BaseModel):
    """The seed's levels; `null` (JSON) or omitting a level in a replaced table turns it off."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["threshold"] = "threshold"
    tick_s: float = Field(default=60.0, gt=0)  # one reading per tick; "periods" count ticks
    cpu: Level | None = Level(threshold=0.70, for_s=120.0, step=2, cooldown_s=180.0)  # mean CPU, 0..1
    gpu_memory: Level | None = Level(threshold=0.80, for_s=60.0, step=3, cooldown_s=120.0)  # 0..1
    queue: Level | None = Level(threshold=50, step=5)  # entries waiting, every class; at once, no cooldown
    # Requests per replica over one tick (the seed's JSON template: RequestCount >= 1000 for 1 period).
    requests: Level | None = Level(threshold=1000, periods=1, step=1, cooldown_s=60.0)
    # Utilisation (the higher of CPU and GPU memory) below 30 % for 3 ticks.
    scale_in: Level | None = Level(threshold=0.30, periods=3, step=1, cooldown_s=300.0)


@dataclass(frozen=True, slots=True)
class Streak:
    since_s: float | None = None  # the first reading of the current run that met the condition
    readings: int = 0
    fired_s: float | None = None  # when this level last fired


@dataclass(frozen=True, slots=True)
class ThresholdState:
    streaks: dict[str, Streak] = field(default_factory=dict)  # by level name; replaced, never mutated


class ThresholdPolicy:
    def __init__(self, config: ThresholdConfig) -> None:
        self.config = config
        self.levels = {name: level for name in (*SCALE_OUT, "scale_in")
                       if (level := getattr(config, name)) is not None}

    def initial(self) -> ThresholdState:
        return ThresholdState({name: Streak() for name in self.levels})

    def decide(self, ctx: PolicyContext, state: ThresholdState) -> tuple[Decision, ThresholdState]:
        now = ctx.signals.at_s
        values = {name: self._reading(name, ctx.signals) for name in self.levels}
        met = {name: _meets(name, self.levels[name], values[name]) for name in self.levels}
        streaks = {name: _advance(state.streaks.get(name, Streak()), met[name], now) for name in self.levels}
        fired = [name for name in self.levels if self._fires(name, streaks[name], now)]
        out = [name for name in fired if name != "scale_in"]
        if out:
            name = max(out, key=lambda n: self.levels[n].step)  # max() keeps the first of equal steps
            step = self.levels[name].step
            others = f" (also: {', '.join(n for n in out if n != name)})" if len(out) > 1 else ""
            reason = f"{self._describe(name, values[name], streaks[name], now)}: +{step}{others}"
            desired = ctx.current_replicas + step
        elif "scale_in" in fired and not any(met[n] for n in SCALE_OUT if n in met):
            name, step = "scale_in", self.levels["scale_in"].step
            reason = f"{self._describe(name, values[name], streaks[name], now)}: -{step}"
            desired = ctx.current_replicas - step
        else:
            return Decision(ctx.current_replicas, "hold"), ThresholdState(streaks)
        streaks[name] = replace(streaks[name], fired_s=now)
        return Decision(desired, reason, rule=name), ThresholdState(streaks)

    def _reading(self, name: str, signals: Signals) -> float | None:
        if name == "cpu":
            return signals.cpu_utilisation
        if name == "gpu_memory":
            return signals.gpu_memory_utilisation
        if name == "queue":
            return float(signals.queue_length)
        if name == "requests":
            return signals.request_rate_per_s * self.config.tick_s / max(1, signals.replicas)
        return max(signals.cpu_utilisation, signals.gpu_memory_utilisation or 0.0)

    def _fires(self, name: str, streak: Streak, now: float) -> bool:
        level = self.levels[name]
        held = streak.since_s is not None and now - streak.since_s >= level.for_s and streak.readings >= level.periods
        cooled = streak.fired_s is None or now - streak.fired_s >= level.cooldown_s
        return held and cooled

    def _describe(self, name: str, value: float | None, streak: Streak, now: float) -> str:
        op = "<" if name == "scale_in" else ">="
        span = now - (streak.since_s if streak.since_s is not None else now)
        return (f"{name} {value:.3g} {op} {self.levels[name].threshold:g} "
                f"over {streak.readings} readings / {span:g} s")


def _meets(name: str, level: Level, value: float | None) -> bool:
    if value is None:  # not measured (no GPU): never met
        return False
    return value < level.threshold if name == "scale_in" else value >= level.threshold


def _advance(streak: Streak, met: bool, now: float) -> Streak:
    if not met:
        return Streak(fired_s=streak.fired_s)
    since = streak.since_s if streak.since_s is not None else now
    return Streak(since, streak.readings + 1, streak.fired_s)
