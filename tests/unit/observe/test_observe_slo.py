"""SLO maths against the SRE workbook's worked examples ("Alerting on SLOs"), on a FakeClock.

For a 99.9 % SLO over 30 days: a 14.4x burn spends 2 % of the budget in 1 h, 6x spends 5 % in 6 h, 1x spends
10 % in 3 d. Detection time of a pair = (1 - SLO) / error ratio x long window x factor: a full outage trips the
1h/5m pair after 0.864 min, a 10 % error ratio after 8.64 min; the pair resets once its 5-minute window has
cooled, about 5 minutes after the errors stop, where the 1-hour window alone would keep firing for an hour.
"""

from __future__ import annotations

import pytest

from peakgate.clock import FakeClock
from peakgate.observe.slo import SRE_PAIRS, MultiwindowBurn, RollingCounts, SloTracker, burn_rate

SLO = 0.999
DAY_S = 86_400.0
PAGE_1H = SRE_PAIRS[0]
PER_MINUTE = 10_000  # events a minute in the budget examples: 14.4x, 6x and 1x of a 0.1 % budget are whole


def _tracker(clock: FakeClock) -> SloTracker:
    return SloTracker("interactive_availability", SLO, clock, period_days=30)


def _minutes(tracker: SloTracker, clock: FakeClock, minutes: int, burn: float) -> None:
    """`minutes` of steady traffic burning at `burn`, one weighted batch of events mid-minute."""
    bad = round(PER_MINUTE * burn * (1 - SLO))
    for _ in range(minutes):
        clock.advance(30.0)
        tracker.add(good=False, weight=bad)
        tracker.add(good=True, weight=PER_MINUTE - bad)
        clock.advance(30.0)


def test_the_pairs_factors_are_the_workbooks_for_a_30_day_period() -> None:
    assert [(p.severity, p.long, p.short, p.factor(30 * DAY_S)) for p in SRE_PAIRS] == [
        ("page", "1h", "5m", 14.4), ("page", "6h", "30m", 6.0), ("ticket", "3d", "6h", 1.0)]
    assert SRE_PAIRS[0].factor(28 * DAY_S) == pytest.approx(13.44)  # 2 % of a 28-day budget in 1 h


def test_burn_rate_is_the_error_ratio_over_the_budget() -> None:
    assert burn_rate(144, 10_000, SLO) == pytest.approx(14.4)
    assert burn_rate(0, 0, SLO) == 0.0


@pytest.mark.parametrize(("burn", "minutes", "spent"), [(14.4, 60, 0.02), (6.0, 360, 0.05), (1.0, 3 * 1440, 0.10)])
def test_a_burn_spends_the_workbooks_share_of_the_budget(burn: float, minutes: int, spent: float) -> None:
    clock = FakeClock()
    tracker = _tracker(clock)
    _minutes(tracker, clock, minutes, burn)
    assert 1 - tracker.budget_remaining() == pytest.approx(spent, rel=1e-9)
    assert tracker.burn("1h") == pytest.approx(burn)


def test_the_budget_spent_is_the_same_after_healthy_days() -> None:
    # A process up for two healthy days, then an hour at 14.4x: still 2 % of the 30-day budget.
    clock = FakeClock()
    tracker = _tracker(clock)
    _minutes(tracker, clock, 2 * 1440, 0.0)
    assert tracker.budget_remaining() == 1.0
    _minutes(tracker, clock, 60, 14.4)
    assert tracker.budget_remaining() == pytest.approx(0.98, rel=1e-9)
    assert tracker.burn("3d") == pytest.approx(14.4 / 49)  # one bad hour in 49


def test_an_overspent_budget_goes_negative() -> None:
    clock = FakeClock()
    tracker = _tracker(clock)
    _minutes(tracker, clock, 60, 1000.0)  # a full outage for an hour: 1000x a 0.1 % budget
    assert tracker.budget_remaining() == pytest.approx(1 - 1000 / 720)


def _per_second(tracker: SloTracker, clock: FakeClock, seconds: int, *, bad: bool = False) -> None:
    for _ in range(seconds):
        tracker.add(good=not bad)
        clock.advance(1.0)


def _seconds_until(tracker: SloTracker, clock: FakeClock, firing: bool, bad_every: int, limit_s: int) -> int:
    """Seconds of one request a second (every `bad_every`-th failing; 0: none) until the pair's state is `firing`."""
    for elapsed in range(limit_s):
        if tracker.firing(PAGE_1H) is firing:
            return elapsed
        tracker.add(good=not (bad_every and elapsed % bad_every == 0))
        clock.advance(1.0)
    raise AssertionError(f"the 1h/5m pair did not {'fire' if firing else 'reset'} within {limit_s} s")


@pytest.mark.parametrize(("bad_every", "detect_s"), [(1, 51.84), (10, 518.4)])
def test_detection_time_of_the_page_pair(bad_every: int, detect_s: float) -> None:
    # (1 - 0.999) / error ratio x 1 h x 14.4: 0.864 min for a full outage, 8.64 min at a 10 % error ratio.
    clock = FakeClock()
    tracker = _tracker(clock)
    _per_second(tracker, clock, 3_600)  # an hour of healthy traffic, one request a second
    assert not tracker.firing(PAGE_1H)
    detected = _seconds_until(tracker, clock, True, bad_every, limit_s=3_600)
    assert detected == pytest.approx(detect_s, abs=bad_every)


def test_reset_time_of_the_page_pair_is_its_short_window() -> None:
    clock = FakeClock()
    tracker = _tracker(clock)
    _per_second(tracker, clock, 3_600)
    _per_second(tracker, clock, 600, bad=True)  # a ten-minute outage
    assert tracker.firing(PAGE_1H) and tracker.alerts() == {"page": True, "ticket": True}
    reset = _seconds_until(tracker, clock, False, bad_every=0, limit_s=3_600)
    # The 5-minute window (10 s buckets) forgets the outage between 4 min 50 s and 5 min after it ends ...
    assert 290 <= reset <= 300
    assert tracker.burn("1h") > 14.4  # ... while the 1-hour window alone would page for most of an hour more


def test_each_window_forgets_what_left_it_and_an_idle_spell_clears_all() -> None:
    counts = RollingCounts(10.0, {"short": 3, "long": 6})
    counts.add(0.0, bad=True)
    counts.add(25.0, bad=False, weight=4)
    assert counts.counts(29.9, "short") == (1, 5) and counts.counts(29.9, "long") == (1, 5)
    assert counts.counts(30.0, "short") == (0, 4)  # bucket 0 has left the 3-bucket window
    assert counts.counts(59.9, "long") == (1, 5)
    assert counts.counts(60.0, "long") == (0, 4)
    assert counts.counts(10_000.0, "long") == (0, 0)  # idle longer than the ring
    counts.add(10_000.0, bad=True)
    assert counts.counts(10_000.0, "short") == (1, 1)


def test_the_ladders_burn_is_the_lower_window_and_needs_enough_events() -> None:
    clock = FakeClock()
    burn = MultiwindowBurn(clock, objective=0.99, windows_s=(60.0, 5.0), min_events=20)
    for _ in range(19):
        burn.add(good=False)
    assert burn.rate() == 0.0  # too few events to judge
    burn.add(good=False)
    assert burn.rate() == pytest.approx(100.0)  # all failed, budget 1 %
    clock.advance(6.0)  # the short window has cooled; the long still burns
    for _ in range(20):
        burn.add(good=True)
    assert burn.rate() == 0.0
    clock.advance(60.0)
    assert burn.rate() == 0.0
