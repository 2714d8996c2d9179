"""Health hysteresis (pure) and the checker's schedule on a FakeClock."""

from __future__ import annotations

import asyncio

import pytest

from peakgate.clock import FakeClock
from peakgate.cluster.health import Check, Health, HealthChecker, Hysteresis, observe

RULE = Hysteresis(failures_before_down=2, successes_before_up=3)
OK, BUSY, DEAD = Check(True, True), Check(True, False), Check(False, False)


def run(checks: list[Check], start: Health | None = None) -> list[Health]:
    health, seen = start or Health(), []
    for check in checks:
        health = observe(health, check, RULE)
        seen.append(health)
    return seen


def test_the_first_check_decides_at_once() -> None:
    assert observe(Health(), OK, RULE) == Health(up=True, ready=True, streak=0, checked=True)
    assert observe(Health(), DEAD, RULE) == Health(up=False, ready=False, streak=0, checked=True)


def test_down_after_failures_before_down_failed_checks_in_a_row() -> None:
    assert [h.up for h in run([OK, DEAD, DEAD])] == [True, True, False]


def test_a_failed_check_between_passes_changes_neither_up_nor_readiness() -> None:
    seen = run([OK, DEAD, OK, DEAD, OK])
    assert all(h.up and h.ready for h in seen)
    assert [h.streak for h in seen] == [0, 1, 0, 1, 0]


def test_up_again_after_successes_before_up_passed_checks_in_a_row() -> None:
    down = run([DEAD])[-1]
    assert [h.up for h in run([OK, OK, DEAD, OK, OK, OK], down)] == [False, False, False, False, False, True]


def test_readiness_follows_the_latest_readyz_answered() -> None:
    seen = run([OK, BUSY, DEAD, OK, DEAD, DEAD])
    assert [(h.up, h.ready) for h in seen] == [(True, True), (True, False), (True, False), (True, True),
                                              (True, True), (False, False)]


class ScriptedProber:
    """Answers each gateway from a script: alive until `dead` names it."""

    def __init__(self) -> None:
        self.dead: set[str] = set()
        self.calls = 0

    async def __call__(self, base_url: str) -> Check:
        self.calls += 1
        return DEAD if base_url in self.dead else OK


async def settle() -> None:
    for _ in range(5):
        await asyncio.sleep(0)


async def test_the_checker_probes_every_interval_on_the_injected_clock() -> None:
    clock, prober = FakeClock(), ScriptedProber()
    checker = HealthChecker(["http://a", "http://b"], prober, clock, RULE, interval_s=1.0)
    await checker.check_all()
    assert checker.health("http://a").up and checker.health("http://b").up
    task = asyncio.create_task(checker.run())
    try:
        await settle()
        prober.dead.add("http://a")
        clock.advance(0.5)
        await settle()
        assert prober.calls == 2  # not yet: half an interval
        for _ in range(RULE.failures_before_down):
            clock.advance(1.0)
            await settle()
        assert prober.calls == 2 + 2 * RULE.failures_before_down
        assert not checker.health("http://a").up and checker.health("http://b").up
    finally:
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task


def test_a_recorded_connect_failure_counts_as_one_failed_check() -> None:
    checker = HealthChecker(["http://a"], ScriptedProber(), FakeClock(), RULE, interval_s=1.0)
    checker.record("http://a", OK)
    checker.record("http://a", DEAD)
    assert checker.health("http://a") == Health(up=True, ready=True, streak=1, checked=True)
