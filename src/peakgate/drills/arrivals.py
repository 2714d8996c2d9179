"""The arrival schedule: a Poisson process whose rate follows the profile, fixed by a seed.

Thinning (Lewis and Shedler): candidates arrive at the peak rate and each is kept with probability
rate(t) / peak. The schedule is computed before the run, so when a request is sent never depends on how the
server answered earlier ones (open loop: an overloaded server cannot slow its own load down).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from peakgate.drills.profile import SurgeProfile


@dataclass(frozen=True, slots=True)
class Arrival:
    index: int
    at_s: float  # seconds from the run's start
    phase: str


def schedule(profile: SurgeProfile, seed: int) -> list[Arrival]:
    """Every arrival of the run, in time order."""
    rng = random.Random(seed)
    peak = max(profile.peak_rps, profile.baseline_rps)
    end = profile.phases.total_s
    out: list[Arrival] = []
    t = rng.expovariate(peak)
    # Bounded: candidates come at the peak rate, so the loop runs about peak * end times.
    while t < end:
        if rng.random() * peak < profile.rate_at(t):
            out.append(Arrival(len(out), t, profile.phase_at(t)))
        t += rng.expovariate(peak)
    return out


def expected_count(profile: SurgeProfile, start_s: float, end_s: float, step_s: float = 0.01) -> float:
    """The integral of the profile's rate over [start_s, end_s): how many arrivals to expect there."""
    steps = max(1, round((end_s - start_s) / step_s))
    width = (end_s - start_s) / steps
    return sum(profile.rate_at(start_s + (i + 0.5) * width) for i in range(steps)) * width
