"""Forecasters: the minute bucketing seam, the sliding-window average, Holt-Winters (seasons, trend, band,
purity), the walk-forward backtest, the config factory."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pytest
from policy_fakes import sig
from pydantic import TypeAdapter, ValidationError

from peakgate.control.forecast import Band, MinuteForecaster
from peakgate.control.forecast_backtest import backtest
from peakgate.control.forecast_config import ForecastConfig, build_forecaster, build_model
from peakgate.control.forecast_holtwinters import DAY_MINUTES, WEEK_MINUTES, HoltWinters, HoltWintersConfig
from peakgate.control.forecast_window import WindowAverage, WindowConfig, WindowState


@dataclass
class Recorder:
    """A minute model that records what it was shown and forecasts the count of minutes seen."""

    def initial(self, history_per_s: object = ()) -> tuple[float, ...]:
        return ()

    def observe(self, state: tuple[float, ...], rate_per_s: float) -> tuple[float, ...]:
        return (*state, rate_per_s)

    def predict(self, state: tuple[float, ...], steps: int) -> Band:
        return (float(len(state)),) * steps, (float(len(state)) + 1,) * steps


def test_minutes_close_once_each_with_the_last_minutes_rate() -> None:
    forecaster = MinuteForecaster(Recorder(), horizon_steps=3)
    state = forecaster.initial()
    seen = []
    for at_s, rate in [(30, 1.0), (50, 2.0), (61, 3.0), (119, 4.0), (125, 5.0), (310, 6.0)]:
        forecast, state = forecaster.update(sig(at_s, rate=rate), state)
        seen.append((forecast.at_s, state.model))
    # 30 s anchors (minute 0 is not closed); 61 s closes minute 0; 125 s minute 1; 310 s minutes 2, 3, 4.
    assert [s for _at, s in seen] == [(), (), (3.0,), (3.0,), (3.0, 5.0), (3.0, 5.0, 6.0, 6.0, 6.0)]
    assert [at for at, _s in seen] == [0.0, 0.0, 60.0, 60.0, 120.0, 300.0]  # the current minute's start


def test_the_forecast_carries_the_horizon_and_the_band() -> None:
    forecast, _state = MinuteForecaster(Recorder(), horizon_steps=4).update(sig(0), MinuteForecaster(
        Recorder(), 4).initial())
    assert (forecast.step_s, len(forecast.mean_per_s), forecast.upper_per_s) == (60.0, 4, (1.0,) * 4)


def test_window_average_weights_recent_minutes_more() -> None:
    model = WindowAverage(WindowConfig(window_s=180, z=2.0))
    state = model.initial([100.0, 1.0, 2.0, 3.0])  # the window keeps the last 3
    assert state == WindowState((1.0, 2.0, 3.0))
    mean, upper = model.predict(state, 2)
    expected_mean = (1 * 1 + 2 * 2 + 3 * 3) / 6
    std = math.sqrt(sum(w * (v - expected_mean) ** 2 for w, v in [(1, 1.0), (2, 2.0), (3, 3.0)]) / 6)
    assert mean == pytest.approx((expected_mean,) * 2)
    assert upper == pytest.approx((expected_mean + 2 * std,) * 2)
    assert model.observe(state, 4.0) == WindowState((2.0, 3.0, 4.0))
    assert model.predict(model.initial(), 1) == ((0.0,), (0.0,))


def _daily(days: int, weekend: float = 1.0) -> np.ndarray:
    t = np.arange(days * DAY_MINUTES)
    weekday = (t // DAY_MINUTES) % 7
    return (200.0 + 100.0 * np.sin(2 * np.pi * t / DAY_MINUTES)) * np.where(weekday >= 5, weekend, 1.0)


def test_holt_winters_learns_the_daily_season_from_history() -> None:
    history = _daily(3)
    model = HoltWinters(HoltWintersConfig())
    mean, upper = model.predict(model.initial(history), 360)
    actual = _daily(4)[3 * DAY_MINUTES : 3 * DAY_MINUTES + 360]
    assert np.max(np.abs(np.array(mean) - actual)) < 2.0
    assert all(u >= m for m, u in zip(mean, upper, strict=True))


def test_holt_winters_learns_the_weekly_season() -> None:
    history = _daily(14 + 5, weekend=0.5)  # two weeks, then Monday to Friday
    model = HoltWinters(HoltWintersConfig())
    mean, _upper = model.predict(model.initial(history), DAY_MINUTES)  # Saturday
    saturday = _daily(14 + 6, weekend=0.5)[-DAY_MINUTES:]
    assert np.mean(np.abs(np.array(mean) - saturday) / saturday) < 0.05


def test_holt_winters_follows_a_ramp_with_a_damped_trend() -> None:
    model = HoltWinters(HoltWintersConfig(alpha=0.5, beta=0.3, damping=0.9))
    state = model.initial([100.0 + 10 * i for i in range(60)])
    mean, _upper = model.predict(state, 30)
    assert 690 < mean[0] <= 700  # the next minute is 700: a damped trend trails a steady ramp a little
    assert mean[0] < mean[-1] < mean[0] + 10 * 0.9 / (1 - 0.9) + 1  # damped: the trend fades


def test_holt_winters_band_widens_with_the_horizon_and_the_state_is_never_mutated() -> None:
    model = HoltWinters(HoltWintersConfig())
    rng = np.random.default_rng(3)
    state = model.initial(100.0 + rng.normal(0, 5, 500))
    daily_before = state.daily.copy()
    after = model.observe(state, 500.0)
    assert np.array_equal(state.daily, daily_before) and after.minute == state.minute + 1
    mean, upper = model.predict(state, 10)
    spread = np.array(upper) - np.array(mean)
    assert spread[0] > 0 and np.all(np.diff(spread) > 0)


def test_holt_winters_starts_without_history() -> None:
    model = HoltWinters(HoltWintersConfig())
    state = model.initial()
    assert model.predict(state, 1) == ((0.0,), (0.0,))
    for _ in range(30):
        state = model.observe(state, 50.0)
    assert model.predict(state, 1)[0][0] == pytest.approx(50.0, rel=0.05)
    assert state.weekly.size == WEEK_MINUTES


def test_backtest_scores_each_minute_before_seeing_it() -> None:
    result = backtest("window", WindowAverage(WindowConfig(window_s=60)), [10.0], [10.0, 20.0, 20.0, 0.0])
    # predictions 10, 10, 20 for 10, 20, 20 (the 0 minute is not scored): errors 0, 0.5, 0
    assert (result.minutes, result.mape_pct) == (3, pytest.approx(100 * 0.5 / 3))
    assert result.coverage_pct == pytest.approx(200 / 3)  # z = 1.645 x 0 spread: 20 > 10 is not covered


def test_backtest_further_ahead_predicts_from_older_states() -> None:
    result = backtest("w", WindowAverage(WindowConfig(window_s=60)), [1.0], [1.0, 2.0, 3.0, 4.0], ahead_minutes=2)
    # minute 2 predicted after minute 0 (1.0), minute 3 after minute 1 (1.0): |2-1|/2, |3-1|/3, |4-2|/4
    assert result.minutes == 3
    assert result.mape_pct == pytest.approx(100 * (0.5 + 2 / 3 + 0.5) / 3)


def test_the_config_picks_the_model_by_kind_and_names_bad_fields() -> None:
    adapter: TypeAdapter[WindowConfig | HoltWintersConfig] = TypeAdapter(ForecastConfig)
    assert isinstance(build_model(adapter.validate_python({"kind": "window"})), WindowAverage)
    forecaster = build_forecaster(adapter.validate_python({"kind": "holt-winters", "horizon_s": 600}))
    assert isinstance(forecaster.model, HoltWinters) and forecaster.horizon_steps == 10
    with pytest.raises(ValidationError, match="alpha"):
        adapter.validate_python({"kind": "holt-winters", "alpha": 0})
    with pytest.raises(ValidationError, match="arima"):
        adapter.validate_python({"kind": "arima"})
