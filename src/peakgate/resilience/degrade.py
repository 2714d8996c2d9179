"""The degradation ladder: trade quality for capacity one step at a time, with hysteresis.

NORMAL -> L1 (no fuzzy TM repair, greedy decoding, no alternatives) -> L2 (INT8 twins instead of FP32)
-> L3 (the light tier for all but pinned tenants) -> CACHE_ONLY (batch served from cache only).
`decide` is the pure policy; `Ladder` holds its state, ticks on the Clock and exposes a `Degradation`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from enum import IntEnum

from peakgate.clock import Clock
from peakgate.config import ModelConfig, PriorityClass
from peakgate.errors import Overloaded
from peakgate.resilience.settings import LadderConfig

HEADER = "X-Peakgate-Degraded"


class Level(IntEnum):
    NORMAL = 0
    L1 = 1
    L2 = 2
    L3 = 3
    CACHE_ONLY = 4


class CacheOnlyRefusal(Overloaded):
    """Batch work refused at CACHE_ONLY. The ladder's own doing, so not counted against the SLO it reads: were
    it counted, the refusals would hold the burn rate up and the ladder at CACHE_ONLY long after the surge."""


@dataclass(frozen=True, slots=True)
class LadderContext:
    now: float
    slo_burn_rate: float
    p95_queue_wait_ms: float
    config: LadderConfig


@dataclass(frozen=True, slots=True)
class LadderState:
    level: Level = Level.NORMAL
    since: float = float("-inf")  # when the current level was entered
    hot_since: float | None = None  # start of the current run of "enter" readings
    cool_since: float | None = None  # start of the current run of "exit" readings


def decide(ctx: LadderContext, state: LadderState) -> tuple[Level, LadderState]:
    """One reading in; at most one step up or down out.

    A reading between the exit and enter thresholds breaks both runs, so a signal hovering near one threshold
    never moves the ladder, and each step needs its own full run plus the minimum dwell.
    """
    cfg = ctx.config
    hot = ctx.slo_burn_rate >= cfg.burn_rate_enter or ctx.p95_queue_wait_ms >= cfg.queue_wait_enter_ms
    cool = ctx.slo_burn_rate < cfg.burn_rate_exit and ctx.p95_queue_wait_ms < cfg.queue_wait_exit_ms
    hot_since = (state.hot_since if state.hot_since is not None else ctx.now) if hot else None
    cool_since = (state.cool_since if state.cool_since is not None else ctx.now) if cool else None
    state = replace(state, hot_since=hot_since, cool_since=cool_since)
    dwelt = ctx.now - state.since >= cfg.min_dwell_s
    if hot_since is not None and dwelt and ctx.now - hot_since >= cfg.enter_for_s and state.level < cfg.max_level:
        level = Level(state.level + 1)
        return level, LadderState(level=level, since=ctx.now, hot_since=ctx.now)
    if cool_since is not None and dwelt and ctx.now - cool_since >= cfg.exit_for_s and state.level > Level.NORMAL:
        level = Level(state.level - 1)
        return level, LadderState(level=level, since=ctx.now, cool_since=ctx.now)
    return state.level, state


@dataclass(frozen=True, slots=True)
class Degradation:
    """What a level means for one request's routing and decoding."""

    level: Level
    beam_cap: int | None  # None: the class's own beam size
    fuzzy_repair: bool
    alternatives: bool
    prefer_int8: bool
    tier_override: str | None  # applies to principals that are not pinned
    batch_cache_only: bool

    @property
    def header(self) -> str | None:
        """Value for the `X-Peakgate-Degraded` response header; None at NORMAL (send no header)."""
        return None if self.level is Level.NORMAL else self.level.name

    def beam_size(self, requested: int) -> int:
        return requested if self.beam_cap is None else min(requested, self.beam_cap)

    def tier_for(self, tier: str, *, pinned: bool) -> str:
        return tier if self.tier_override is None or pinned else self.tier_override

    def cache_only(self, priority: PriorityClass) -> bool:
        return self.batch_cache_only and priority == "batch"


def degradation_for(level: Level, config: LadderConfig) -> Degradation:
    return Degradation(
        level=level,
        beam_cap=config.l1_beam_cap if level >= Level.L1 else None,
        fuzzy_repair=level < Level.L1,
        alternatives=level < Level.L1,
        prefer_int8=level >= Level.L2,
        tier_override=config.light_tier if level >= Level.L3 else None,
        batch_cache_only=level >= Level.CACHE_ONLY,
    )


def map_chain(chain: Iterable[str], degradation: Degradation, twins: Mapping[str, str]) -> tuple[str, ...]:
    """A fallback chain under `degradation`: at L2+ each model with an INT8 twin is replaced by it (deduplicated)."""
    out: list[str] = []
    for name in chain:
        mapped = twins.get(name, name) if degradation.prefer_int8 else name
        if mapped not in out:
            out.append(mapped)
    return tuple(out)


def int8_twins(models: Iterable[ModelConfig]) -> dict[str, str]:
    """FP32 model name -> its INT8 twin: same engine and pair, and the same name with "fp32" read as "int8"."""
    by_name = {m.name: m for m in models}
    twins: dict[str, str] = {}
    for model in by_name.values():
        if "fp32" not in model.name:
            continue
        twin = by_name.get(model.name.replace("fp32", "int8"))
        if twin is not None and (twin.engine, twin.source, twin.target) == (model.engine, model.source, model.target):
            twins[model.name] = twin.name
    return twins


class Ladder:
    """Holds the ladder's state; `tick` feeds it one reading of the signals at the Clock's now."""

    def __init__(
        self,
        config: LadderConfig,
        clock: Clock,
        *,
        on_change: Callable[[Level, Level], None] | None = None,
    ) -> None:
        self._config = config
        self._clock = clock
        self._on_change = on_change
        self._state = LadderState()  # no dwell at start: a service that boots into a peak may step up at once
        self._degradation = degradation_for(Level.NORMAL, config)
        self.changes = 0

    @property
    def level(self) -> Level:
        return self._state.level

    @property
    def degradation(self) -> Degradation:
        return self._degradation

    @property
    def header(self) -> str | None:
        return self._degradation.header

    def tick(self, slo_burn_rate: float, p95_queue_wait_ms: float) -> Level:
        ctx = LadderContext(self._clock.now(), slo_burn_rate, p95_queue_wait_ms, self._config)
        old = self._state.level
        level, self._state = decide(ctx, self._state)
        if level is not old:
            self._degradation = degradation_for(level, self._config)
            self.changes += 1
            if self._on_change is not None:
                self._on_change(old, level)
        return level

    async def run(self, signals: Callable[[], tuple[float, float]]) -> None:
        """Tick every `tick_s` with `signals() -> (slo_burn_rate, p95_queue_wait_ms)` until cancelled."""
        while True:
            self.tick(*signals())
            await self._clock.sleep(self._config.tick_s)
