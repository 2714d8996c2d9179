"""The recovery phase of bench.overload: after the surge, offered load drops below capacity; how long until the
server answers (nearly) everything again?

Arrivals are binned by their scheduled send time; the server has recovered at the start of the first bin from
which every later bin succeeds at `threshold` or better (a 200, not a 429/503/504 or a lost request).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from bench._http import OpenLoopResult, Outcome

THRESHOLD = 0.99


@dataclass(frozen=True, slots=True)
class Recovery:
    klass: str  # a class, or "all"
    offered: int
    success: float  # share answered 200 over the whole phase
    recovered_s: float | None  # None: not recovered by the end of the phase
    accepted_segments: int = 0


def _bins(outcomes: Sequence[Outcome], started: float, bin_s: float) -> dict[int, list[bool]]:
    bins: dict[int, list[bool]] = {}
    for o in outcomes:
        bins.setdefault(max(0, int((o.sent_at - started) // bin_s)), []).append(o.status == 200)
    return bins


def recovered_after_s(outcomes: Sequence[Outcome], started: float, *, bin_s: float = 1.0,
                      threshold: float = THRESHOLD) -> float | None:
    """Seconds from `started` to the first bin that every later bin's success rate keeps at `threshold`."""
    bins = _bins(outcomes, started, bin_s)
    recovered: int | None = None
    for index in sorted(bins, reverse=True):
        ok = bins[index]
        if sum(ok) / len(ok) < threshold:
            break
        recovered = index
    return None if recovered is None else recovered * bin_s


def recovery(result: OpenLoopResult, classes: Sequence[str], *, bin_s: float = 1.0) -> list[Recovery]:
    """Per class and over all: success over the phase and the time to recover."""
    rows = []
    for klass in (*classes, "all"):
        mine = [o for o in result.outcomes if klass in ("all", o.klass)]
        success = sum(o.status == 200 for o in mine) / len(mine) if mine else math.nan
        rows.append(Recovery(klass, len(mine), success, recovered_after_s(mine, result.started, bin_s=bin_s),
                             sum(o.segments for o in mine if o.status == 200)))
    return rows


def recovery_lines(rows: Sequence[Recovery], load: float, deadlines_s: dict[str, float]) -> list[str]:
    lines = [f"recovery at {load:.1f}x capacity, right after the surge (recovered: every later 1 s of arrivals "
             f">= {THRESHOLD:.0%} answered 200)",
             f"  {'class':<12}{'offered':>8}{'success':>9}{'recovered after s':>19}{'class deadline s':>18}"]
    for row in rows:
        after = "never" if row.recovered_s is None else f"{row.recovered_s:.0f}"
        deadline = deadlines_s.get(row.klass)
        lines.append(f"  {row.klass:<12}{row.offered:>8}{row.success:>9.3f}{after:>19}"
                     f"{'-' if deadline is None else f'{deadline:.0f}':>18}")
    return lines
