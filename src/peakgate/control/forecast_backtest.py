"""Walk-forward backtest of a minute model: seed it with the history, then predict each minute `ahead`
minutes before it is seen. MAPE is the mean of |actual - predicted| / actual over minutes with arrivals;
coverage is the share of minutes at or under the upper band."""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from peakgate.control.forecast import MinuteModel


@dataclass(frozen=True, slots=True)
class Backtest:
    name: str
    minutes: int  # minutes scored
    ahead_minutes: int
    mape_pct: float
    coverage_pct: float


def backtest(name: str, model: MinuteModel[Any], history: Iterable[float], actual: Iterable[float],
             ahead_minutes: int = 1) -> Backtest:
    state = model.initial(history)
    pending: deque[tuple[float, float]] = deque()  # (mean, upper) for the coming minutes, oldest first
    errors: list[float] = []
    covered = 0
    for value in actual:
        mean, upper = model.predict(state, ahead_minutes)
        pending.append((mean[-1], upper[-1]))
        if len(pending) == ahead_minutes:
            predicted, band = pending.popleft()
            if value > 0:
                errors.append(abs(value - predicted) / value)
                covered += value <= band
        state = model.observe(state, value)
    scored = len(errors)
    return Backtest(name, scored, ahead_minutes, 100 * sum(errors) / scored if scored else float("nan"),
                    100 * covered / scored if scored else float("nan"))
