"""The arrival schedule: a seeded Poisson process whose rate follows the profile."""

from __future__ import annotations

import math

from peakgate.drills.arrivals import expected_count, schedule
from peakgate.drills.profile import Phases, SurgeProfile

PROFILE = SurgeProfile(baseline_rps=50, multiplier=6,
                       phases=Phases(baseline_s=20, ramp_s=10, hold_s=20, decay_s=10))


def _within_sigmas(observed: int, expected: float, sigmas: float = 4.0) -> bool:
    return abs(observed - expected) <= sigmas * math.sqrt(expected)  # Poisson: variance = mean


def test_counts_per_phase_match_the_profile() -> None:
    arrivals = schedule(PROFILE, seed=7)
    for name, start, end in PROFILE.phases.spans():
        observed = sum(1 for a in arrivals if start <= a.at_s < end)
        assert _within_sigmas(observed, expected_count(PROFILE, start, end)), name
        assert all(a.phase == name for a in arrivals if start <= a.at_s < end)


def test_the_hold_runs_at_the_peak_rate_second_by_second() -> None:
    arrivals = schedule(PROFILE, seed=3)
    per_second = [sum(1 for a in arrivals if s <= a.at_s < s + 1) for s in range(30, 50)]
    mean = sum(per_second) / len(per_second)
    assert abs(mean - 300) < 4 * math.sqrt(300 / len(per_second))
    variance = sum((n - mean) ** 2 for n in per_second) / (len(per_second) - 1)
    assert 0.3 * mean < variance < 2.5 * mean  # Poisson-like spread, not a metronome


def test_seeded_ordered_and_inside_the_window() -> None:
    first, again, other = schedule(PROFILE, 1), schedule(PROFILE, 1), schedule(PROFILE, 2)
    assert first == again and first != other
    times = [a.at_s for a in first]
    assert times == sorted(times) and times[0] > 0 and times[-1] < PROFILE.phases.total_s
    assert [a.index for a in first] == list(range(len(first)))


def test_expected_count_integrates_the_rate() -> None:
    assert expected_count(PROFILE, 0, 20) == 1000
    assert abs(expected_count(PROFILE, 20, 30) - (50 + 300) / 2 * 10) < 1e-6
