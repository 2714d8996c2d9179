"""The warm pool's bridge (which standby workers to promote or take back), its size from a forecast, and the
cold-start / warm-promotion timer, on fakes."""

from __future__ import annotations

import pytest
from autoscale_fakes import WALL, FakeFlags, beat, signals

from peakgate.clock import FakeClock
from peakgate.control.contract import Forecast
from peakgate.control.loop_settings import WarmPoolConfig
from peakgate.control.warm import WarmPool, warm_target
from peakgate.control.warm_timing import StartKind, StartupTimer
from peakgate.scaleout.wall import WallClock


class Wall:
    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock

    def now(self) -> float:
        return WALL + self._clock.now()


def _pool() -> tuple[WarmPool, FakeFlags, StartupTimer, list[tuple[StartKind, float]]]:
    clock = FakeClock()
    flags = FakeFlags()
    samples: list[tuple[StartKind, float]] = []
    timer = StartupTimer(10.0, lambda kind, s: samples.append((kind, s)))
    wall: WallClock = Wall(clock)
    return WarmPool(flags, timer, clock, wall), flags, timer, samples


async def test_a_scale_up_promotes_standby_workers_for_the_replicas_not_yet_serving() -> None:
    pool, flags, _, _ = _pool()
    fleet = [beat("c1"), beat("w1", warm=True, standby=True), beat("w2", warm=True, standby=True),
             beat("w3", warm=True, standby=True)]
    bridge = await pool.bridge(3, fleet, timed=True)
    assert flags.calls == [("w1", True), ("w2", True)]  # 3 wanted, 1 cold serving: 2 bridged
    assert bridge.promoted == 2 and [e.kind for e in bridge.events] == ["promoted", "promoted"]
    again = await pool.bridge(3, fleet, timed=True)  # the flags are set, the beats not yet updated
    assert flags.calls == [("w1", True), ("w2", True)] and again.promoted == 2


async def test_promoted_workers_stand_by_again_once_cold_replicas_serve() -> None:
    pool, flags, _, _ = _pool()
    await pool.bridge(3, [beat("c1"), beat("w1", warm=True, standby=True), beat("w2", warm=True, standby=True)],
                      timed=True)
    flags.calls.clear()
    fleet = [beat("c1"), beat("c2"), beat("w1", warm=True), beat("w2", warm=True)]
    bridge = await pool.bridge(3, fleet, timed=True)  # one cold replica is ready: one bridge left
    assert bridge.promoted == 1 and flags.calls == [("w2", False)]
    bridge = await pool.bridge(3, [*fleet, beat("c3")], timed=True)
    assert bridge.promoted == 0 and flags.calls[-1] == ("w1", False)


async def test_no_standby_worker_means_no_bridge_and_draining_or_unready_ones_never_serve() -> None:
    pool, flags, _, _ = _pool()
    fleet = [beat("c1"), beat("w1", warm=True, standby=True, draining=True),
             beat("w2", warm=True, standby=True, ready=False)]
    bridge = await pool.bridge(4, fleet, timed=True)
    assert bridge.promoted == 0 and flags.calls == []


async def test_a_promotion_is_timed_only_while_work_waits() -> None:
    pool, _, timer, samples = _pool()
    timer.observe([])
    await pool.bridge(2, [beat("c1"), beat("w1", warm=True, standby=True)], timed=False)
    timer.observe([beat("c1"), beat("w1", warm=True, served_at=WALL + 5.0)])
    assert samples == []


def test_the_pool_is_the_configured_size_without_a_forecast_and_sized_from_its_upper_band_with_one() -> None:
    config = WarmPoolConfig(replicas=1, max_replicas=4)
    assert warm_target(config, None, signals(rate=50.0), 10.0) == 1
    forecast = Forecast(at_s=0.0, step_s=60.0, mean_per_s=(50.0, 60.0), upper_per_s=(65.0, 80.0))
    assert warm_target(config, forecast, signals(rate=50.0, capacity=10.0), 10.0) == 2  # (65 - 50) / 10 -> 2
    assert warm_target(config, forecast, signals(rate=50.0, capacity=10.0), 90.0) == 3  # (80 - 50) / 10
    assert warm_target(config, forecast, signals(rate=50.0, capacity=5.0), 90.0) == 4  # 6, capped
    assert warm_target(config, forecast, signals(rate=100.0), 90.0) == 1  # falling: the configured floor
    assert warm_target(config, forecast, signals(rate=50.0, capacity=0.0), 10.0) == 1  # capacity unknown


def test_a_cold_start_runs_from_the_decision_to_a_new_workers_first_request() -> None:
    samples: list[tuple[StartKind, float]] = []
    timer = StartupTimer(10.0, lambda kind, s: samples.append((kind, s)))
    timer.observe([beat("old", served_at=WALL)])  # there before any decision: never timed
    timer.scaled_up(2, WALL + 100.0)
    timer.observe([beat("old", served_at=WALL), beat("new1", ready=False), beat("w", warm=True, standby=True)])
    timer.observe([beat("old"), beat("new1", served_at=WALL + 103.5), beat("new2", served_at=WALL + 104.0)])
    assert samples == [("cold", 3.5), ("cold", 4.0)]
    assert timer.cold_s == 4.0


def test_a_scale_in_forgets_decisions_no_worker_answered_yet() -> None:
    samples: list[tuple[StartKind, float]] = []
    timer = StartupTimer(10.0, lambda kind, s: samples.append((kind, s)))
    timer.observe([])
    timer.scaled_up(1, WALL + 100.0)
    timer.scaled_down()
    timer.observe([beat("late", served_at=WALL + 500.0)])
    assert samples == [] and timer.cold_s == 10.0


def test_a_warm_promotion_is_timed_from_its_flag_and_an_earlier_stints_first_request_is_ignored() -> None:
    samples: list[tuple[StartKind, float]] = []
    timer = StartupTimer(10.0, lambda kind, s: samples.append((kind, s)))
    timer.observe([beat("w", warm=True, standby=True)])
    timer.promoted("w", WALL + 50.0)
    timer.observe([beat("w", warm=True, standby=True, served_at=WALL + 10.0)])  # not noticed yet
    timer.observe([beat("w", warm=True, served_at=WALL + 10.0)])  # a beat from before the promotion took
    timer.observe([beat("w", warm=True, served_at=WALL + 50.4)])
    assert samples == [("warm", pytest.approx(0.4))]
    timer.promoted("w", WALL + 60.0)
    timer.demoted("w")
    timer.observe([beat("w", warm=True, served_at=WALL + 61.0)])
    assert len(samples) == 1 and timer.cold_s == 10.0  # warm promotions never change the cold estimate
