"""Which forecaster: a config union keyed by `kind` ("window" | "holt-winters") and its factories."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from peakgate.control.forecast import MINUTE_S, MinuteForecaster, MinuteModel
from peakgate.control.forecast_holtwinters import HoltWinters, HoltWintersConfig
from peakgate.control.forecast_window import WindowAverage, WindowConfig

ForecastConfig = Annotated[WindowConfig | HoltWintersConfig, Field(discriminator="kind")]


def build_model(config: WindowConfig | HoltWintersConfig) -> MinuteModel[Any]:
    """The minute model a config names (backtests use it directly; the loop wants `build_forecaster`)."""
    if isinstance(config, WindowConfig):
        return WindowAverage(config)
    return HoltWinters(config)


def build_forecaster(config: WindowConfig | HoltWintersConfig) -> MinuteForecaster[Any]:
    return MinuteForecaster(build_model(config), int(config.horizon_s // MINUTE_S))
