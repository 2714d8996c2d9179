"""Degradation ladder: one step at a time, hysteresis, dwell, no flapping; what each level implies."""

from __future__ import annotations

import asyncio
from itertools import pairwise

import pytest

from peakgate.clock import FakeClock
from peakgate.config import ModelConfig
from peakgate.resilience.degrade import (
    HEADER,
    Ladder,
    LadderContext,
    LadderState,
    Level,
    decide,
    degradation_for,
    int8_twins,
    map_chain,
)
from peakgate.resilience.settings import LadderConfig

CFG = LadderConfig(
    burn_rate_enter=6.0,
    burn_rate_exit=2.0,
    queue_wait_enter_ms=400.0,
    queue_wait_exit_ms=100.0,
    enter_for_s=30.0,
    exit_for_s=60.0,
    min_dwell_s=45.0,
    tick_s=5.0,
)
HOT = (10.0, 0.0)
WARM = (4.0, 0.0)  # between exit and enter
COOL = (0.5, 10.0)


def _drive(ladder: Ladder, clock: FakeClock, signal: tuple[float, float], seconds: float) -> list[Level]:
    levels = []
    for _ in range(round(seconds / CFG.tick_s)):
        clock.advance(CFG.tick_s)
        levels.append(ladder.tick(*signal))
    return levels


def test_pure_step_up_needs_a_sustained_signal() -> None:
    state = LadderState(since=0.0)
    level, state = decide(LadderContext(50.0, 10.0, 0.0, CFG), state)
    assert level is Level.NORMAL and state.hot_since == 50.0
    level, state = decide(LadderContext(79.0, 10.0, 0.0, CFG), state)
    assert level is Level.NORMAL
    level, state = decide(LadderContext(80.0, 10.0, 0.0, CFG), state)
    assert level is Level.L1 and state.since == 80.0


def test_queue_wait_alone_can_climb() -> None:
    state = LadderState(since=-100.0)
    _, state = decide(LadderContext(0.0, 0.0, 500.0, CFG), state)
    level, _ = decide(LadderContext(30.0, 0.0, 500.0, CFG), state)
    assert level is Level.L1


def test_ladder_climbs_one_level_per_dwell_and_stops_at_max() -> None:
    clock = FakeClock()
    ladder = Ladder(CFG, clock)
    levels = _drive(ladder, clock, HOT, 400.0)
    ups = [t for t, (a, b) in enumerate(pairwise(levels)) if b > a]
    assert levels[-1] is Level.CACHE_ONLY
    assert all(b - a <= 1 for a, b in pairwise(levels))
    assert all((b - a) * CFG.tick_s >= CFG.min_dwell_s for a, b in pairwise(ups))


def test_max_level_caps_the_climb() -> None:
    clock = FakeClock()
    ladder = Ladder(CFG.model_copy(update={"max_level": 3}), clock)
    assert _drive(ladder, clock, HOT, 600.0)[-1] is Level.L3


def test_ladder_descends_one_level_at_a_time_after_a_cool_run() -> None:
    clock = FakeClock()
    ladder = Ladder(CFG, clock)
    _drive(ladder, clock, HOT, 100.0)  # L1 at 35 s, L2 at 80 s (dwell 45 s)
    assert ladder.level is Level.L2
    levels = _drive(ladder, clock, COOL, 55.0)
    assert set(levels) == {Level.L2}  # not yet exit_for_s
    levels = _drive(ladder, clock, COOL, 200.0)
    assert levels[-1] is Level.NORMAL
    assert all(a - b <= 1 for a, b in pairwise(levels))


def test_between_thresholds_holds_the_level() -> None:
    clock = FakeClock()
    ladder = Ladder(CFG, clock)
    _drive(ladder, clock, HOT, 50.0)
    assert ladder.level is Level.L1
    assert set(_drive(ladder, clock, WARM, 600.0)) == {Level.L1}


def test_noisy_signal_does_not_flap() -> None:
    clock = FakeClock()
    changes: list[tuple[Level, Level]] = []
    ladder = Ladder(CFG, clock, on_change=lambda old, new: changes.append((old, new)))
    # Hovers around the enter threshold: never hot for 30 s straight.
    noisy = [(7.0, 0.0), (5.5, 0.0), (6.5, 0.0), (5.9, 0.0), (8.0, 0.0), (6.0, 0.0), (3.0, 0.0)]
    for i in range(200):
        clock.advance(CFG.tick_s)
        ladder.tick(*noisy[i % len(noisy)])
    assert changes == []
    # Around the exit threshold after a climb: stays up rather than bouncing.
    _drive(ladder, clock, HOT, 50.0)
    assert ladder.level is Level.L1
    around_exit = [(1.5, 0.0), (2.5, 0.0), (1.0, 0.0), (1.9, 0.0), (2.1, 0.0)]
    for i in range(200):
        clock.advance(CFG.tick_s)
        ladder.tick(*around_exit[i % len(around_exit)])
    assert ladder.level is Level.L1
    assert ladder.changes == 1


def test_degradation_per_level() -> None:
    normal, l1, l2, l3, cache = (degradation_for(level, CFG) for level in Level)
    assert (normal.beam_cap, normal.fuzzy_repair, normal.prefer_int8, normal.tier_override) == (None, True, False, None)
    assert normal.header is None
    assert (l1.beam_cap, l1.fuzzy_repair, l1.alternatives, l1.prefer_int8) == (1, False, False, False)
    assert l1.header == "L1"
    assert l2.prefer_int8 and l2.tier_override is None
    assert l3.tier_override == "tiny" and not l3.batch_cache_only
    assert cache.batch_cache_only and cache.header == "CACHE_ONLY"
    assert HEADER == "X-Peakgate-Degraded"


def test_degradation_applies_to_decoding_and_routing() -> None:
    l1, l3, cache = (degradation_for(level, CFG) for level in (Level.L1, Level.L3, Level.CACHE_ONLY))
    assert l1.beam_size(4) == 1
    assert degradation_for(Level.NORMAL, CFG).beam_size(4) == 4
    assert l3.tier_for("large", pinned=False) == "tiny"
    assert l3.tier_for("large", pinned=True) == "large"
    assert l1.tier_for("large", pinned=False) == "large"
    assert cache.cache_only("batch") and not cache.cache_only("interactive")
    assert not l3.cache_only("batch")


def _model(name: str, source: str = "en") -> ModelConfig:
    return ModelConfig(name=name, engine="ctranslate2", source=source, target="es")


def test_int8_twins_and_chain_mapping() -> None:
    models = [_model("en-es-fp32"), _model("en-es-int8"), _model("de-es-fp32", "de"), _model("fr-es-int8", "en")]
    twins = int8_twins(models)
    assert twins == {"en-es-fp32": "en-es-int8"}
    chain = ("en-es-fp32", "en-es-int8", "apertium")
    assert map_chain(chain, degradation_for(Level.L1, CFG), twins) == chain
    assert map_chain(chain, degradation_for(Level.L2, CFG), twins) == ("en-es-int8", "apertium")


def test_twin_must_serve_the_same_pair() -> None:
    assert int8_twins([_model("x-fp32"), _model("x-int8", "de")]) == {}


async def test_run_ticks_on_the_clock() -> None:
    clock = FakeClock()
    ladder = Ladder(CFG.model_copy(update={"min_dwell_s": 0.0, "enter_for_s": 10.0}), clock)
    task = asyncio.create_task(ladder.run(lambda: HOT))
    for _ in range(4):
        await asyncio.sleep(0)
        clock.advance(CFG.tick_s)
    await asyncio.sleep(0)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert ladder.level is Level.L2  # ticks at 0..20 s: hot run of 10 s at 10 s, again at 20 s
