"""The off-peak backlog gate: troughs from the forecast, the floor's spare capacity, deadlines."""

from __future__ import annotations

import pytest

from peakgate.control.backlog import BacklogConfig, in_trough, plan
from peakgate.control.contract import Forecast

CONFIG = BacklogConfig(trough_quantile=0.25, urgent_s=3600.0, fill_to_utilisation=0.5, horizon_s=600.0)


def forecast(*mean: float) -> Forecast:
    return Forecast(at_s=0.0, step_s=60.0, mean_per_s=mean, upper_per_s=mean)


def test_a_trough_is_the_lowest_quantile_of_the_horizon() -> None:
    assert in_trough([1.0, 2.0, 3.0, 4.0, 5.0], 0.25)
    assert not in_trough([3.0, 1.0, 2.0, 4.0, 5.0], 0.25)


def test_in_a_trough_backlog_fills_the_floors_spare_capacity() -> None:
    release = plan(CONFIG, 100.0, forecast(10, 50, 60, 70, 80, 90, 95, 99, 100, 100), 200.0, 1000.0)
    assert release.fill_per_s == pytest.approx(300.0)  # 0.5 x 1000 - 200
    assert release.urgent_before_s == 3700.0


def test_outside_a_trough_only_deadlines_release() -> None:
    release = plan(CONFIG, 0.0, forecast(100, 10, 10, 10, 10), 0.0, 1000.0)
    assert (release.fill_per_s, release.reason) == (0.0, "not a trough")
    assert plan(CONFIG, 0.0, None, 0.0, 1000.0).fill_per_s == 0.0


def test_the_horizon_bounds_the_trough_test() -> None:
    # Past the 10-minute horizon a deeper trough does not count.
    assert plan(CONFIG, 0.0, forecast(*([10.0] + [50.0] * 9 + [1.0] * 100)), 0.0, 100.0).fill_per_s == 50.0


def test_no_spare_capacity_releases_nothing() -> None:
    assert plan(CONFIG, 0.0, forecast(1, 2, 3, 4), 900.0, 1000.0).fill_per_s == 0.0
