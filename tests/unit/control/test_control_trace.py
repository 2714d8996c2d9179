"""Trace files (and their errors, which name the line and field) and the synthetic holiday trace."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from peakgate.control.trace import TraceError, load_trace
from peakgate.control.trace_holiday import DAY_S, HolidayTraceConfig, day_shape, holiday_trace
from peakgate.errors import ConfigError


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "trace.csv"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_trace_file_with_comments_and_some_streams(tmp_path: Path) -> None:
    trace = load_trace(write(tmp_path, "# a comment\nat_s,interactive,batch\n0,10,1\n60,20,1\n120,30,1\n"),
                       history_s=60)
    assert (trace.step_s, trace.steps, trace.replay_from_step) == (60, 3, 1)
    assert trace.rates["document"].tolist() == [0.0, 0.0, 0.0]
    replay = trace.per_second("interactive")
    assert replay.size == 120 and replay[0] == 20.0 and replay[30] == 25.0  # linear between the rows
    assert trace.minutes(replay=False).tolist() == pytest.approx([1 + 10 + 10 * 29.5 / 60])


@pytest.mark.parametrize(("text", "message"), [
    ("at_s,interactive,chats\n0,1,1\n60,1,1\n", "line 1: unknown column 'chats'"),
    ("t,interactive\n0,1\n60,1\n", "line 1: the first column must be 'at_s'"),
    ("at_s,interactive,interactive\n0,1,1\n60,1,1\n", "line 1: needs at_s and distinct stream columns"),
    ("at_s,interactive\n0,1\n60,lots\n", "line 3, field 'interactive': 'lots' is not a number"),
    ("at_s,interactive\n0,1\n60,-4\n", "line 3, field 'interactive': '-4' must be finite and >= 0"),
    ("at_s,interactive\n0,1\n60,nan\n", "line 3, field 'interactive': 'nan' must be finite"),
    ("at_s,interactive\n0,1\n60\n", "line 3: 1 fields, the header has 2"),
    ("at_s,interactive\n0,1\n60,1\n130,1\n", "line 4, field 'at_s': 130 breaks the 60 s step"),
    ("at_s,interactive\n0,1\n0.5,1\n", "line 3, field 'at_s': the step must be whole seconds"),
    ("at_s,interactive\n0,1\n", "needs a header and at least two rows"),
])
def test_a_malformed_trace_file_is_an_error_naming_the_line_and_field(tmp_path: Path, text: str,
                                                                       message: str) -> None:
    with pytest.raises(TraceError, match=message.replace("(", r"\(")) as caught:
        load_trace(write(tmp_path, text))
    assert isinstance(caught.value, ConfigError)


def test_a_history_longer_than_the_trace_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="leaves nothing to replay"):
        load_trace(write(tmp_path, "at_s,interactive\n0,1\n60,1\n"), history_s=600)


def test_a_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match="cannot read"):
        load_trace(tmp_path / "nope.csv")


def test_the_day_shape_averages_one() -> None:
    seconds = np.arange(0, DAY_S, 60, dtype=np.float64)
    assert float(np.mean(day_shape(seconds))) == pytest.approx(1.0)
    assert day_shape(np.array([4 * 3600.0]))[0] < 0.5 < day_shape(np.array([10.5 * 3600.0]))[0]


def test_the_holiday_trace_surges_tenfold_within_minutes_on_its_seasonality() -> None:
    config = HolidayTraceConfig(noise=0.0)
    trace = holiday_trace(config)
    holiday = config.history_days * DAY_S
    assert trace.replay_from_step * 60 == holiday + 8 * 3600  # replay from 08:00 on the holiday
    assert trace.steps * 60 == holiday + 8 * 3600 + DAY_S
    interactive = trace.rates["interactive"]
    at = (holiday + 20 * 3600 + 300) // 60  # the end of the 5-minute ramp
    assert interactive[at] / interactive[at - 7 * 1440] == pytest.approx(10.0)  # the same minute a week before
    assert interactive[at - 5] / interactive[at - 5 - 7 * 1440] == pytest.approx(1.0)
    assert trace.rates["deferrable"][(holiday + 10 * 3600) // 60] == config.deferrable_per_s  # office hours
    assert trace.rates["deferrable"][(holiday + 5 * DAY_S + 10 * 3600) // 60 - 7 * 1440] == 0.0  # a Saturday
