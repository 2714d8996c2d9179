"""The control loop on fakes and a FakeClock: one tick end to end, clamps, the warm pool and its refill, decision
logs and metrics, startup timing, and every failure reported without the loop ever stopping."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass

import pytest
from autoscale_fakes import WALL, FakeBeats, FakeFlags, FakeProvider, FakeSignals, QueuePolicy, beat, signals

from peakgate.clock import FakeClock
from peakgate.control.contract import Forecast, ProviderState, ReplicaEvent, Signals
from peakgate.control.loop import ControlLoop
from peakgate.control.loop_metrics import AutoscaleMetrics
from peakgate.control.loop_settings import AutoscaleConfig
from peakgate.control.warm import WarmPool
from peakgate.control.warm_timing import StartupTimer

TICK_S = 5.0


class Wall:
    def __init__(self, clock: FakeClock) -> None:
        self._clock = clock

    def now(self) -> float:
        return WALL + self._clock.now()


@dataclass
class Rig:
    clock: FakeClock
    loop: ControlLoop
    policy: QueuePolicy
    provider: FakeProvider
    source: FakeSignals
    beats: FakeBeats
    flags: FakeFlags
    metrics: AutoscaleMetrics

    def sample(self, metric: str, **labels: str) -> float:
        return self.metrics.registry.get_sample_value(metric, labels) or 0.0


class RisingForecaster:
    """A stand-in for `forecast.Forecaster`: counts the ticks it folded in."""

    def initial(self, history_per_s: object = ()) -> int:
        return 0

    def update(self, signals: Signals, state: int) -> tuple[Forecast, int]:
        return Forecast(signals.at_s, 60.0, (10.0,), (100.0 + state,)), state + 1


def _rig(*, queue: int = 0, warm: bool = True, forecaster: RisingForecaster | None = None, **config: object) -> Rig:
    clock = FakeClock()
    settings = AutoscaleConfig.model_validate({
        "policy": {"kind": "threshold", "tick_s": TICK_S}, "clamps": {"min_replicas": 1, "max_replicas": 4},
        "warm": {"replicas": 1, "max_replicas": 3}, "startup_prior_s": 10.0, **config})
    metrics = AutoscaleMetrics()
    timer = StartupTimer(settings.startup_prior_s, lambda kind, s: metrics.startup.labels(kind).observe(s))
    policy, provider, source = QueuePolicy(), FakeProvider(), FakeSignals(lambda: signals(clock.now(), queue=queue))
    beats, flags = FakeBeats([beat("c1", served_at=WALL)]), FakeFlags()
    pool = WarmPool(flags, timer, clock, Wall(clock)) if warm else None
    loop = ControlLoop(config=settings, signals=source, policy=policy, policy_name="queue-test", provider=provider,
                       beats=beats, warm=pool, timer=timer, clock=clock, wall=Wall(clock), metrics=metrics,
                       forecaster=forecaster)
    return Rig(clock, loop, policy, provider, source, beats, flags, metrics)


async def test_a_tick_asks_the_policy_clamps_its_answer_and_asks_the_provider(caplog: pytest.LogCaptureFixture
                                                                           ) -> None:
    rig = _rig(queue=7)
    rig.provider.state = ProviderState(serving=2, starting=1, draining=0)
    with caplog.at_level(logging.INFO, logger="peakgate.control.loop"):
        decision = await rig.loop.tick()
    assert decision is not None and decision.desired_replicas == 4 and decision.rule == "queue"
    [ctx] = rig.policy.seen
    assert ctx.current_replicas == 3 and ctx.startup_s == 10.0 and ctx.signals.queue_length == 7
    assert rig.provider.scaled == [4]
    rig.provider.state = ProviderState(serving=4, starting=0, draining=0)
    decision = await rig.loop.tick()
    assert decision is not None and decision.desired_replicas == 4  # 5 asked, bounded
    assert "bounded to [1, 4]" in decision.reason
    assert rig.sample("peakgate_autoscale_decisions_total", policy="queue-test", rule="queue") == 2
    assert rig.sample("peakgate_autoscale_desired_replicas") == 4
    assert rig.sample("peakgate_autoscale_signal", name="queue_length") == 7
    assert "3 -> 4 replicas, policy queue-test, rule queue: queue 7 > 0 (queue 7," in caplog.text


async def test_a_hold_is_logged_and_counted_too() -> None:
    rig = _rig()
    decision = await rig.loop.tick()
    assert decision is not None and decision.rule == "hold" and rig.provider.scaled == [1]
    assert rig.sample("peakgate_autoscale_decisions_total", policy="queue-test", rule="hold") == 1


async def test_the_warm_pool_bridges_a_scale_up_and_is_kept_at_its_size_besides_the_promoted() -> None:
    rig = _rig(queue=5)
    rig.beats.beats = [beat("c1"), beat("w1", warm=True, standby=True), beat("w2", warm=True, standby=True)]
    await rig.loop.tick()  # 1 serving -> 2 wanted: one cold start, one warm worker bridging it
    assert rig.flags.calls == [("w1", True)]
    assert rig.provider.warm == [2]  # a pool of 1, plus the promoted one: the pool refills
    assert rig.sample("peakgate_autoscale_warm_target") == 1
    assert rig.sample("peakgate_autoscale_replica_events_total", kind="promoted") == 1


async def test_with_a_forecaster_each_tick_folds_in_and_the_policy_sees_the_forecast() -> None:
    rig = _rig(forecaster=RisingForecaster())
    await rig.loop.tick()
    await rig.loop.tick()
    assert [ctx.forecast.upper_per_s for ctx in rig.policy.seen if ctx.forecast] == [(100.0,), (101.0,)]


async def test_a_scale_up_under_load_times_the_new_workers_cold_start_and_feeds_it_to_the_policy() -> None:
    rig = _rig(queue=3, warm=False)
    await rig.loop.tick()  # 1 -> 2 at WALL + 0
    rig.clock.advance(TICK_S)
    rig.beats.beats = [beat("c1"), beat("c2", served_at=WALL + 4.25)]
    rig.provider.state = ProviderState(serving=2, starting=0, draining=0)
    await rig.loop.tick()
    assert rig.sample("peakgate_autoscale_startup_seconds_sum", kind="cold") == 4.25
    assert rig.policy.seen[-1].startup_s == 4.25


async def test_provider_failures_are_reported_backed_off_and_retried_never_raised(
        caplog: pytest.LogCaptureFixture) -> None:
    rig = _rig(queue=1, warm=False, backoff_initial_s=10.0, backoff_max_s=40.0)
    rig.provider.failing = True
    assert await rig.loop.tick() is None
    assert rig.sample("peakgate_autoscale_errors_total", stage="provider") == 1
    calls = rig.provider.calls
    rig.clock.advance(TICK_S)
    assert await rig.loop.tick() is None and rig.provider.calls == calls  # left alone for 10 s
    rig.clock.advance(TICK_S)
    assert await rig.loop.tick() is None and rig.provider.calls == calls + 1  # tried again, 20 s next
    rig.provider.failing = False
    rig.clock.advance(20.0)
    decision = await rig.loop.tick()
    assert decision is not None and rig.provider.scaled == [2]
    assert "provider failing (2 in a row): next call in 20.0s" in caplog.text


async def test_signals_out_of_reach_skip_the_tick_before_any_decision() -> None:
    rig = _rig()
    rig.source.down = True
    assert await rig.loop.tick() is None
    assert rig.policy.seen == [] and rig.provider.calls == 0
    assert rig.sample("peakgate_autoscale_errors_total", stage="signals") == 1


async def test_lifecycle_events_are_logged_and_counted(caplog: pytest.LogCaptureFixture) -> None:
    rig = _rig(warm=False)
    rig.provider.state = ProviderState(serving=1, starting=0, draining=0, events=(
        ReplicaEvent("worker-2", "failed", 0.0, "exited with code 2 before it was ready"),))
    with caplog.at_level(logging.INFO, logger="peakgate.control.loop"):
        await rig.loop.tick()
    assert rig.sample("peakgate_autoscale_replica_events_total", kind="failed") == 2  # from current and scale_to
    assert "replica worker-2 failed: exited with code 2 before it was ready" in caplog.text
    assert rig.sample("peakgate_autoscale_replicas", state="serving") == 1


async def test_run_survives_a_policy_bug_and_keeps_ticking_until_stopped() -> None:
    rig = _rig(warm=False)
    rig.policy.broken = True
    stop = asyncio.Event()
    run = asyncio.create_task(rig.loop.run(stop))
    for _ in range(3):
        await asyncio.sleep(0)
        rig.clock.advance(TICK_S)
        await asyncio.sleep(0)
    assert len(rig.policy.seen) >= 3  # it kept ticking
    assert rig.sample("peakgate_autoscale_errors_total", stage="unexpected") >= 3
    stop.set()
    await asyncio.wait_for(run, 1.0)
