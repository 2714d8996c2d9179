"""Live cost: each tick prices the provider's fleet (baseline on-demand, burst on the burst market) for the time
since the previous tick on the loop's clock, attributes it over the engine work the gateways counted in it, and
adds it to `peakgate_cost_total` on the autoscaler's registry; the loop tells its observers every tick and a
failing observer never stops scaling."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace

import pytest
from autoscale_fakes import WALL, FakeBeats, FakeProvider, FakeSignals, QueuePolicy, signals

from peakgate.clock import FakeClock
from peakgate.control.contract import ProviderState, Signals, Tick, TickObserver
from peakgate.control.cost import IDLE, CostConfig, CostKey, CostMeter, InstanceType
from peakgate.control.cost_live import LiveCost, billed_instances, fleet_cost
from peakgate.control.loop import ControlLoop
from peakgate.control.loop_metrics import AutoscaleMetrics
from peakgate.control.loop_settings import AutoscaleConfig
from peakgate.control.warm_timing import StartupTimer

A = CostKey("student-en-es-int8", "medium", "acme", "/v2/translate")
B = CostKey("apertium-en-es", "tiny", "other", "jobs")
# 3.6 per hour on-demand, 1.8 spot: 0.001 and 0.0005 per second.
PRICES = CostConfig(instance=InstanceType(name="x", on_demand_per_hour=3.6, spot_per_hour=1.8))


def test_the_baseline_runs_on_demand_and_the_burst_on_the_burst_market() -> None:
    assert fleet_cost(PRICES, 2, 5, 10.0) == pytest.approx({"on-demand": 0.02, "spot": 0.015})
    assert fleet_cost(PRICES, 2, 1, 10.0) == pytest.approx({"on-demand": 0.01, "spot": 0.0})
    over_cap = PRICES.model_copy(update={"spot_price_cap": 0.4})  # spot at 50 % of on-demand: over the cap
    assert fleet_cost(over_cap, 2, 5, 10.0) == pytest.approx({"on-demand": 0.05, "spot": 0.0})
    assert billed_instances(ProviderState(serving=3, starting=1, draining=1, warm=2)) == 7


def _cost(metrics: AutoscaleMetrics, key: CostKey, market: str) -> float:
    labels = {"model": key.model, "tier": key.tier, "tenant": key.tenant, "endpoint": key.endpoint, "market": market}
    return metrics.registry.get_sample_value("peakgate_cost_total", labels) or 0.0


def _tick(at_s: float, fleet: ProviderState | None, usage: dict[CostKey, float] | None = None) -> Tick:
    return Tick(replace(signals(at_s), engine_chars_by_key=usage or {}), None, fleet)


async def test_each_tick_charges_its_duration_split_by_the_work_served_in_it() -> None:
    metrics = AutoscaleMetrics()
    cost = LiveCost(PRICES, 1, CostMeter(metrics.registry))
    fleet = ProviderState(serving=2, starting=0, draining=0, warm=1)  # 3 instances: 1 on-demand, 2 spot
    await cost.observe(_tick(100.0, fleet, {A: 500.0}))  # the first tick only starts the count
    assert _cost(metrics, A, "on-demand") == 0.0
    await cost.observe(_tick(110.0, fleet, {A: 300.0, B: 100.0}))  # 10 s: 0.01 on-demand, 0.01 spot
    assert _cost(metrics, A, "on-demand") == pytest.approx(0.0075)
    assert _cost(metrics, B, "on-demand") == pytest.approx(0.0025)
    assert _cost(metrics, A, "spot") == pytest.approx(0.0075)
    await cost.observe(_tick(130.0, fleet))  # 20 s with no engine work: idle
    assert _cost(metrics, IDLE, "on-demand") == pytest.approx(0.02)
    assert _cost(metrics, IDLE, "spot") == pytest.approx(0.02)


async def test_an_unknown_fleet_is_not_charged_and_its_time_is_not_carried_over() -> None:
    metrics = AutoscaleMetrics()
    cost = LiveCost(PRICES, 1, CostMeter(metrics.registry))
    await cost.observe(_tick(0.0, None))
    await cost.observe(_tick(10.0, None, {A: 1.0}))
    await cost.observe(_tick(15.0, ProviderState(serving=1, starting=0, draining=0), {A: 1.0}))
    assert _cost(metrics, A, "on-demand") == pytest.approx(0.005)  # 5 s, not 15


@dataclass
class _Recorder:
    stage: str = "recorder"
    ticks: list[Tick] = field(default_factory=list)
    broken: bool = False

    async def observe(self, tick: Tick) -> None:
        self.ticks.append(tick)
        if self.broken:
            raise ZeroDivisionError("observer bug")


@dataclass
class _Rig:
    clock: FakeClock
    loop: ControlLoop
    provider: FakeProvider
    policy: QueuePolicy
    metrics: AutoscaleMetrics


def _rig(*observers: TickObserver, usage: dict[CostKey, float] | None = None,
         metrics: AutoscaleMetrics | None = None) -> _Rig:
    clock, policy, provider = FakeClock(), QueuePolicy(), FakeProvider()
    metrics = metrics or AutoscaleMetrics()
    config = AutoscaleConfig.model_validate({"policy": {"kind": "threshold", "tick_s": 5.0}})

    def snapshot() -> Signals:
        return replace(signals(clock.now()), engine_chars_by_key=usage or {})

    loop = ControlLoop(config=config, signals=FakeSignals(snapshot), policy=policy, policy_name="q",
                       provider=provider, beats=FakeBeats(), warm=None, timer=StartupTimer(10.0, lambda k, s: None),
                       clock=clock, wall=_Wall(), metrics=metrics, observers=observers)
    return _Rig(clock, loop, provider, policy, metrics)


class _Wall:
    def now(self) -> float:
        return WALL


async def test_the_loop_tells_its_observers_the_fleet_it_last_scaled_to_even_while_the_provider_backs_off() -> None:
    recorder = _Recorder()
    rig = _rig(recorder)
    rig.provider.state = ProviderState(serving=2, starting=1, draining=0)
    await rig.loop.tick()
    rig.provider.failing = True
    rig.clock.advance(5.0)
    assert await rig.loop.tick() is None  # the provider failed: no decision, the observers were told anyway
    rig.clock.advance(5.0)
    await rig.loop.tick()  # backing off
    assert [t.signals.at_s for t in recorder.ticks] == [0.0, 5.0, 10.0]
    assert [t.fleet for t in recorder.ticks] == [None, rig.provider.state, rig.provider.state]


async def test_a_failing_observer_is_reported_and_the_tick_goes_on(caplog: pytest.LogCaptureFixture) -> None:
    broken = _Recorder(stage="cost", broken=True)
    rig = _rig(broken)
    with caplog.at_level(logging.ERROR, logger="peakgate.control.loop"):
        decision = await rig.loop.tick()
    assert decision is not None and rig.provider.scaled == [1]
    assert rig.metrics.registry.get_sample_value("peakgate_autoscale_errors_total", {"stage": "cost"}) == 1
    assert "autoscale cost failed unexpectedly" in caplog.text


async def test_the_loop_charges_live_cost_on_its_own_registry_tick_by_tick() -> None:
    metrics = AutoscaleMetrics()
    rig = _rig(LiveCost(PRICES, 1, CostMeter(metrics.registry)), usage={A: 100.0}, metrics=metrics)
    rig.provider.state = ProviderState(serving=3, starting=0, draining=0)
    for _ in range(3):
        await rig.loop.tick()
        rig.clock.advance(5.0)
    # The two intervals after the first tick: 10 s of 1 on-demand and 2 spot instances, all of it A's work.
    assert _cost(metrics, A, "on-demand") == pytest.approx(0.01)
    assert _cost(metrics, A, "spot") == pytest.approx(0.01)
