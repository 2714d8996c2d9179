"""The forecast trough (pure, on explicit times): demand expected over the horizon at most a fraction of the recent
peak, not before enough history, peaks forgotten after their window; and its publisher, a tick observer that
writes the notice with a TTL of a few ticks, and `peakgate autoscale`'s wiring of both observers."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from autoscale_fakes import WALL, signals

from peakgate.config import Settings
from peakgate.control.autoscale_cli import tick_observers
from peakgate.control.contract import Forecast, Tick
from peakgate.control.cost_live import LiveCost
from peakgate.control.loop_metrics import AutoscaleMetrics
from peakgate.control.trough import TroughConfig, TroughDecision, TroughState, decide
from peakgate.control.trough_publish import TroughPublisher
from peakgate.jobs.offpeak import OffPeakNotice

HOUR_S = 3600.0
CONFIG = TroughConfig(horizon_s=600.0, trough_fraction=0.5, peak_window_s=86_400.0, min_history_s=HOUR_S)


def _flat(at_s: float, upper: float, steps: int = 30) -> Forecast:
    return Forecast(at_s, 60.0, (upper,) * steps, (upper,) * steps)


def _run(rates: list[tuple[float, float]], forecast_upper: float, config: TroughConfig = CONFIG
         ) -> tuple[TroughDecision, TroughState]:
    """Feed (at_s, rate) observations in turn; the last one is decided with a flat forecast at `forecast_upper`."""
    state = TroughState()
    decision = None
    for at_s, rate in rates:
        decision, state = decide(config, signals(at_s, rate=rate), _flat(at_s, forecast_upper), state)
    assert decision is not None
    return decision, state


def test_a_trough_is_demand_over_the_horizon_at_most_the_fraction_of_the_recent_peak() -> None:
    day = [(0.0, 100.0), (2 * HOUR_S, 30.0)]  # the peak at 0, quiet now
    decision, _ = _run(day, forecast_upper=50.0)
    assert decision.off_peak and decision.peak_per_s == 100.0 and decision.threshold_per_s == 50.0
    assert decision.expected_per_s == 50.0 and "expected 50.0/s <= 50% of the peak 100.0/s" in decision.reason
    assert not _run(day, forecast_upper=50.1)[0].off_peak
    assert not _run([(0.0, 100.0), (2 * HOUR_S, 51.0)], forecast_upper=10.0)[0].off_peak  # busy now


def test_only_the_horizon_counts_of_the_forecast() -> None:
    rising = Forecast(2 * HOUR_S, 60.0, (20.0,) * 10 + (90.0,) * 20, (20.0,) * 10 + (90.0,) * 20)
    _, state = _run([(0.0, 100.0)], forecast_upper=0.0)
    decision, _ = decide(CONFIG, signals(2 * HOUR_S, rate=20.0), rising, state)  # 10 steps of 60 s: 600 s
    assert decision.off_peak and decision.expected_per_s == 20.0
    longer = CONFIG.model_copy(update={"horizon_s": 660.0})
    assert not decide(longer, signals(2 * HOUR_S, rate=20.0), rising, state)[0].off_peak


def test_no_trough_is_vouched_for_before_min_history() -> None:
    decision, _ = _run([(0.0, 100.0), (HOUR_S - 1, 0.0)], forecast_upper=0.0)
    assert not decision.off_peak and "3599 s of history, 3600 s needed" in decision.reason
    assert _run([(0.0, 100.0), (HOUR_S, 0.0)], forecast_upper=0.0)[0].off_peak


def test_an_idle_system_is_off_peak() -> None:
    assert _run([(0.0, 0.0), (HOUR_S, 0.0)], forecast_upper=0.0)[0].off_peak


def test_the_peak_is_forgotten_after_its_window_and_the_state_stays_small() -> None:
    rates = [(0.0, 100.0)] + [(h * HOUR_S, 40.0) for h in range(1, 25)]
    decision, state = _run(rates, forecast_upper=30.0)
    assert decision.peak_per_s == 40.0 and not decision.off_peak  # 100/s was a day ago: 30 > 50 % of 40
    assert len(state.peaks) <= 24
    decision, _ = _run(rates[:-1], forecast_upper=30.0)
    assert decision.peak_per_s == 100.0 and decision.off_peak


@dataclass
class _Writer:
    written: list[tuple[str, bytes, float]] = field(default_factory=list)

    async def set_expiring(self, key: str, value: bytes, ttl_s: float) -> None:
        self.written.append((key, value, ttl_s))


class _Wall:
    def now(self) -> float:
        return WALL


async def test_the_publisher_writes_each_forecast_ticks_notice_with_a_ttl_of_a_few_ticks() -> None:
    writer = _Writer()
    publisher = TroughPublisher(CONFIG.model_copy(update={"min_history_s": 0.0}), writer, "pg:control:offpeak",
                                tick_s=10.0, wall=_Wall())
    await publisher.observe(Tick(signals(0.0, rate=100.0), None, None))  # no forecast: nothing to say
    assert writer.written == []
    await publisher.observe(Tick(signals(0.0, rate=100.0), _flat(0.0, 100.0), None))
    await publisher.observe(Tick(signals(60.0, rate=10.0), _flat(60.0, 20.0), None))
    [(key, first, ttl_s), (_, second, _)] = writer.written
    assert key == "pg:control:offpeak" and ttl_s == 30.0  # 3 ticks
    assert not OffPeakNotice.decode(first).off_peak
    notice = OffPeakNotice.decode(second)
    assert notice.off_peak and notice.at_wall_s == WALL and notice.expected_per_s == 20.0
    assert notice.peak_per_s == 100.0 and notice.threshold_per_s == 50.0 and notice.horizon_s == 600.0


@pytest.mark.parametrize(("autoscale", "kinds"), [
    ({}, [LiveCost]),
    ({"forecast": {"kind": "window"}}, [LiveCost, TroughPublisher]),
    ({"forecast": {"kind": "window"}, "offpeak": {"publish": False}}, [LiveCost]),
])
def test_the_autoscaler_charges_cost_always_and_publishes_the_trough_with_a_forecaster(
        autoscale: dict[str, object], kinds: list[type]) -> None:
    settings = Settings.model_validate({"queue": {"backend": "redis"}, "autoscale": autoscale})
    observers = tick_observers(settings, _Writer(), _Wall(), AutoscaleMetrics())
    assert [type(o) for o in observers] == kinds
