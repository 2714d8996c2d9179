"""run_at_nice: threads an engine creates inherit the lowered priority; the caller's own is untouched."""

from __future__ import annotations

import os
import threading

import pytest

from peakgate.backends.ctranslate2_backend import pick_lane
from peakgate.backends.niceness import NICE_SUPPORTED, run_at_nice


def _nice(native_id: int) -> int:
    return os.getpriority(os.PRIO_PROCESS, native_id)


@pytest.mark.skipif(not NICE_SUPPORTED, reason="per-thread nice values are a Linux feature")
def test_threads_started_inside_inherit_the_nice_value_and_the_caller_keeps_its_own() -> None:
    mine = _nice(threading.get_native_id())
    seen: list[int] = []

    def start_worker() -> str:
        # Stands in for an engine constructor that starts its own worker threads.
        worker = threading.Thread(target=lambda: seen.append(_nice(threading.get_native_id())))
        worker.start()
        worker.join()
        return "built"

    assert run_at_nice(start_worker, 7) == "built"
    assert seen == [min(19, mine + 7)]
    assert _nice(threading.get_native_id()) == mine


def test_zero_runs_in_place_and_errors_reach_the_caller() -> None:
    caller = threading.get_ident()
    assert run_at_nice(threading.get_ident, 0) == caller

    def boom() -> None:
        raise ValueError("bad model")

    with pytest.raises(ValueError, match="bad model"):
        run_at_nice(boom, 5)


@pytest.mark.parametrize(("running", "urgent", "lane"), [
    ((0, 0), True, 0), ((0, 0), False, 1),  # each kind to its own lane
    ((2, 0), True, 1), ((0, 1), False, 0),  # to the other lane only where a replica is free
    ((2, 1), True, 0), ((2, 1), False, 1),  # all busy: queue at its own lane
])
def test_pick_lane(running: tuple[int, int], urgent: bool, lane: int) -> None:
    assert pick_lane(running, (2, 1), urgent) == lane


def test_pick_lane_with_one_pool() -> None:
    assert pick_lane([3], [2], urgent=False) == pick_lane([0], [2], urgent=True) == 0
