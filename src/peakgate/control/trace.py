"""Arrival traces for the simulator: a CSV file format with clear errors, and the synthetic holiday trace.

A trace is one rate (segments/s) per stream per step, the rate at the step's start (seconds in between are
interpolated linearly). Streams: the three priority classes and `deferrable`
(backlog jobs that may wait for a forecast trough or their deadline; the batch class when they run). The steps
before `replay_from_step` are history: forecasters learn from them, the simulator does not replay them.

CSV: a header `at_s,<streams...>` (any of interactive, document, batch, deferrable), then one row per step with
`at_s` rising by a constant whole number of seconds; lines starting with `#` are comments.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from peakgate.errors import ConfigError

STREAMS = ("interactive", "document", "batch", "deferrable")
Vector = npt.NDArray[np.float64]


class TraceError(ConfigError):
    """A trace file or trace option the simulator cannot use; the message names the line and field."""


@dataclass(frozen=True, slots=True)
class MixEntry:
    """Who sends a stream's work, for cost attribution: a share of the stream by tier, tenant and endpoint."""

    tier: str
    tenant: str
    endpoint: str
    share: float


_DEFAULT_ENDPOINTS = {"interactive": "/v1/translate", "document": "/v2/document", "batch": "/v1/jobs",
                      "deferrable": "/v1/jobs"}


def default_mix() -> dict[str, tuple[MixEntry, ...]]:
    return {s: (MixEntry("medium", "-", endpoint, 1.0),) for s, endpoint in _DEFAULT_ENDPOINTS.items()}


@dataclass(frozen=True, slots=True)
class Trace:
    name: str
    step_s: int
    rates: Mapping[str, Vector]  # by stream, segments/s per step; every stream present (zeros when absent)
    replay_from_step: int = 0
    mix: Mapping[str, tuple[MixEntry, ...]] = field(default_factory=default_mix)

    @property
    def steps(self) -> int:
        return len(self.rates["interactive"])

    def per_second(self, stream: str, replay: bool = True) -> Vector:
        """The stream's rate for each second (of the replayed part, or of the history)."""
        rates = self.rates[stream]
        start, end = (self.replay_from_step, self.steps) if replay else (0, self.replay_from_step)
        seconds = np.arange(start * self.step_s, end * self.step_s, dtype=np.float64)
        return np.interp(seconds, np.arange(self.steps, dtype=np.float64) * self.step_s, rates)

    def minutes(self, replay: bool, streams: Sequence[str] = STREAMS) -> Vector:
        """The streams' arrivals per minute (mean rate over each whole minute), as a forecaster sees them."""
        total = np.sum([self.per_second(s, replay) for s in streams], axis=0)
        whole = total.size // 60 * 60
        return total[:whole].reshape(-1, 60).mean(axis=1) if whole else np.zeros(0)


def load_trace(path: Path, history_s: float = 0.0) -> Trace:
    """A CSV trace; the first `history_s` seconds are history (not replayed)."""
    try:
        with path.open(newline="", encoding="utf-8") as handle:
            rows = [(n, row) for n, row in enumerate(csv.reader(handle), start=1)
                    if row and not row[0].lstrip().startswith("#")]
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise TraceError(f"trace {path}: cannot read: {exc}") from exc
    if len(rows) < 3:
        raise TraceError(f"trace {path}: needs a header and at least two rows")
    header_line, header = rows[0]
    columns = [name.strip() for name in header]
    _check_header(path, header_line, columns)
    times, values = _parse_rows(path, columns, rows[1:])
    step = _step(path, times, rows[1:])
    rates = {s: np.asarray(values[s], dtype=np.float64) if s in values else np.zeros(len(times)) for s in STREAMS}
    replay_from = math.ceil(history_s / step)
    if not 0 <= replay_from < len(times):
        raise TraceError(f"trace {path}: history of {history_s:g} s leaves nothing to replay")
    return Trace(path.name, step, rates, replay_from)


def _check_header(path: Path, line: int, columns: list[str]) -> None:
    if not columns or columns[0] != "at_s":
        raise TraceError(f"trace {path} line {line}: the first column must be 'at_s', not {columns[:1]}")
    for name in columns[1:]:
        if name not in STREAMS:
            raise TraceError(f"trace {path} line {line}: unknown column {name!r} (streams: {', '.join(STREAMS)})")
    if len(set(columns)) != len(columns) or len(columns) < 2:
        raise TraceError(f"trace {path} line {line}: needs at_s and distinct stream columns")


def _parse_rows(path: Path, columns: list[str], rows: list[tuple[int, list[str]]]
                ) -> tuple[list[float], dict[str, list[float]]]:
    times: list[float] = []
    values: dict[str, list[float]] = {name: [] for name in columns[1:]}
    for line, row in rows:
        if len(row) != len(columns):
            raise TraceError(f"trace {path} line {line}: {len(row)} fields, the header has {len(columns)}")
        for name, text in zip(columns, row, strict=True):
            try:
                value = float(text)
            except ValueError:
                raise TraceError(f"trace {path} line {line}, field {name!r}: {text!r} is not a number") from None
            if not math.isfinite(value) or (value < 0 and name != "at_s"):
                raise TraceError(f"trace {path} line {line}, field {name!r}: {text!r} must be finite and >= 0")
            (times if name == "at_s" else values[name]).append(value)
    return times, values


def _step(path: Path, times: list[float], rows: list[tuple[int, list[str]]]) -> int:
    step = times[1] - times[0]
    if step < 1 or step != int(step):
        raise TraceError(f"trace {path} line {rows[1][0]}, field 'at_s': the step must be whole seconds >= 1")
    for (line, _row), before, after in zip(rows[1:], times, times[1:], strict=False):
        if after - before != step:
            raise TraceError(f"trace {path} line {line}, field 'at_s': {after:g} breaks the {step:g} s step")
    return int(step)
