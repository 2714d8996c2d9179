"""Forecasters: minute-level arrival-rate models behind one pure `(signals, state) -> (forecast, state)` seam.

A `MinuteModel` sees one value per closed minute (requests/s over that minute) and predicts the next minutes
with an upper band. `MinuteForecaster` adapts it to the control loop: it closes minutes from each tick's
`Signals.request_rate_per_s` (arrivals over the last minute) and anchors the `Forecast` at the current minute's
start, so a policy can look `startup_s` ahead exactly. The models: `forecast_window.WindowAverage` (a sliding-window
weighted average) and `forecast_holtwinters.HoltWinters` (daily/weekly seasonality); `forecast_config` builds one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Generic, Protocol, TypeVar

from peakgate.control.contract import Forecast, Signals

S = TypeVar("S")
M = TypeVar("M")

MINUTE_S = 60.0
Band = tuple[tuple[float, ...], tuple[float, ...]]  # (mean, upper) per minute ahead


class Forecaster(Protocol[S]):
    """A pure forecaster: `initial(history)` seeds it with past minutes; `update` folds in one tick."""

    def initial(self, history_per_s: Iterable[float] = ()) -> S: ...

    def update(self, signals: Signals, state: S) -> tuple[Forecast, S]: ...


class MinuteModel(Protocol[M]):
    """One value per minute in, `steps` minutes of (mean, upper) out; `initial` replays the history."""

    def initial(self, history_per_s: Iterable[float] = ()) -> M: ...

    def observe(self, state: M, rate_per_s: float) -> M: ...

    def predict(self, state: M, steps: int) -> Band: ...


@dataclass(frozen=True, slots=True)
class MinuteState(Generic[M]):
    model: M
    closed_minute: int | None = None  # index (at_s // 60) of the last minute folded into the model


class MinuteForecaster(Generic[M]):
    """A `Forecaster` over any `MinuteModel`: closes each finished minute with the tick's last-minute rate."""

    def __init__(self, model: MinuteModel[M], horizon_steps: int) -> None:
        self.model = model
        self.horizon_steps = horizon_steps

    def initial(self, history_per_s: Iterable[float] = ()) -> MinuteState[M]:
        return MinuteState(self.model.initial(history_per_s))

    def update(self, signals: Signals, state: MinuteState[M]) -> tuple[Forecast, MinuteState[M]]:
        current = int(signals.at_s // MINUTE_S)
        # The first tick only anchors the count (the minute before it is history's, or unseen); a gap (a paused
        # loop) repeats the last rate seen for every minute it skipped.
        first = current if state.closed_minute is None else state.closed_minute + 1
        model = state.model
        for _minute in range(first, current):
            model = self.model.observe(model, signals.request_rate_per_s)
        new_state = replace(state, model=model, closed_minute=max(current, first) - 1)
        mean, upper = self.model.predict(model, self.horizon_steps)
        return Forecast(at_s=current * MINUTE_S, step_s=MINUTE_S, mean_per_s=mean, upper_per_s=upper), new_state
