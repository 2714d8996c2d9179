"""The open-loop runner on a FakeClock and a fake target: sends on schedule whatever is unanswered, caps and
counts what it cannot send, stops by itself, follows jobs, samples the target."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Coroutine
from typing import Any

from peakgate.clock import FakeClock
from peakgate.drills.arrivals import schedule
from peakgate.drills.mix import Planned, Planner
from peakgate.drills.profile import Mix, Phases, SurgeProfile, Timeouts
from peakgate.drills.records import CANCELLED, DROPPED, RunResult
from peakgate.drills.runner import Runner
from peakgate.drills.summary import summarize
from peakgate.drills.wire import Call, Reply

METRICS = (b"# TYPE peakgate_degradation_level gauge\npeakgate_degradation_level 2.0\n"
           b"# TYPE peakgate_segments_served counter\n"
           b'peakgate_segments_served_total{origin="engine"} 10.0\n'
           b'peakgate_segments_served_total{origin="cache"} 5.0\n')
SYNC_ONLY = Mix(short=1, long=0, repeated=0, document=0, batch=0)


class FakeTarget:
    """Answers after `latency_s` on the fake clock; jobs are done at their second poll."""

    def __init__(self, clock: FakeClock, latency_s: float = 0.5, shed_every: int = 0, hinted: bool = True) -> None:
        self.clock, self.latency_s, self.shed_every, self.hinted = clock, latency_s, shed_every, hinted
        self.calls: list[Call] = []
        self.open = self.max_open = 0
        self.polls: dict[str, int] = {}
        self.jobs = 0

    async def send(self, call: Call, timeout_s: float) -> Reply:
        self.calls.append(call)
        if call.path == "/metrics":
            return Reply(200, {}, METRICS)
        self.open += 1
        self.max_open = max(self.max_open, self.open)
        try:
            await self.clock.sleep(self.latency_s)
        finally:
            self.open -= 1
        return self._answer(call)

    def _answer(self, call: Call) -> Reply:
        if call.path == "/v2/translate":
            if self.shed_every and len(self.calls) % self.shed_every == 0:
                return Reply(429, {"retry-after": "1"} if self.hinted else {}, b"{}")
            return Reply(200, {"x-peakgate-degraded": "int8"}, b"{}")
        if call.path in ("/v2/document", "/v1/jobs"):
            self.jobs += 1
            if call.path == "/v1/jobs":
                return Reply(202, {}, b'{"job_id": "j%d", "status": "queued"}' % self.jobs)
            return Reply(200, {}, b'{"document_id": "d/%d", "document_key": "k"}' % self.jobs)
        self.polls[call.path] = self.polls.get(call.path, 0) + 1
        return Reply(200, {}, b'{"status": "done"}' if self.polls[call.path] >= 2 else b'{"status": "queued"}')


def _profile(rate: float = 50.0, seconds: float = 1.0, mix: Mix = SYNC_ONLY, **timeouts: Any) -> SurgeProfile:
    return SurgeProfile(baseline_rps=rate, multiplier=1, mix=mix, timeouts=Timeouts(**timeouts),
                        phases=Phases(baseline_s=seconds, ramp_s=0, hold_s=0, decay_s=0))


def _plans(profile: SurgeProfile) -> list[Planned]:
    planner = Planner(profile, 0)
    return [planner.plan(a) for a in schedule(profile, 0)]


async def _drive(clock: FakeClock, run: Coroutine[Any, Any, RunResult], step_s: float = 0.01) -> RunResult:
    task = asyncio.ensure_future(run)
    for _ in range(100_000):
        for _ in range(3):
            await asyncio.sleep(0)
        if task.done():
            return task.result()
        clock.advance(step_s)
    raise AssertionError("the runner did not stop by itself")


def _runner(target: FakeTarget, profile: SurgeProfile, clock: FakeClock, **kw: Any) -> Runner:
    return Runner(target, _plans(profile), profile, clock, target="http://t:1", seed=0, **kw)


async def test_arrivals_go_out_on_schedule_whatever_is_unanswered() -> None:
    clock = FakeClock()
    target = FakeTarget(clock, latency_s=2.0)
    profile = _profile(rate=100)
    result = await _drive(clock, _runner(target, profile, clock).run())
    sent = [c for c in target.calls if c.path != "/metrics"]
    assert len(sent) == len(result.records) > 60
    assert target.max_open == len(sent)  # every one was sent before the first answer came back
    assert all(r.accepted and abs(r.latency_s - 2.0) < 0.05 for r in result.records)  # type: ignore[operator]
    assert result.max_lag_s < 0.05
    assert summarize(result, profile)["checks"]["counts_add_up"]


async def test_the_outstanding_cap_drops_and_counts() -> None:
    clock = FakeClock()
    result = await _drive(clock, _runner(FakeTarget(clock, latency_s=5.0), _profile(), clock,
                                         max_outstanding=10).run())
    dropped = [r for r in result.records if r.status == DROPPED]
    assert len(dropped) == len(result.records) - 10 > 0
    summary = summarize(result, _profile())
    assert summary["total"]["generator_dropped"] == len(dropped) and summary["checks"]["counts_add_up"]
    assert not summary["checks"]["generator_kept_up"]


async def test_it_stops_by_itself_after_the_drain() -> None:
    clock = FakeClock()
    profile = _profile(seconds=2.0)
    result = await _drive(clock, _runner(FakeTarget(clock, latency_s=1000.0), profile, clock, drain_s=3.0).run())
    assert 5.0 <= clock.now() < 5.2 and 5.0 <= result.ended_s < 5.2
    assert {r.status for r in result.records} == {CANCELLED}
    assert summarize(result, profile)["total"]["errors_by_outcome"] == {"cancelled at drain": len(result.records)}


async def test_jobs_are_polled_on_the_target_until_done() -> None:
    clock = FakeClock()
    profile = _profile(rate=5, seconds=2.0, mix=Mix(short=0, long=0, repeated=0, document=1, batch=1),
                       poll_interval_s=1.0)
    target = FakeTarget(clock, latency_s=0.1)
    result = await _drive(clock, _runner(target, profile, clock, drain_s=20.0).run())
    assert result.records and all(r.job == "done" for r in result.records)
    assert all(2.0 < r.job_s < 4.0 for r in result.records)  # type: ignore[operator]  # polls at +1 s, +3 s
    polled = {c.path for c in target.calls} - {"/metrics", "/v2/document", "/v1/jobs"}
    assert all(re.fullmatch(r"/v2/document/d%2F\d+|/v1/jobs/j\d+", p) for p in polled)  # ids quoted: one segment
    assert len(polled) == target.jobs == len(result.records)
    assert result.followups.polls == 2 * len(result.records)


async def test_jobs_beyond_the_tracking_cap_are_not_polled() -> None:
    clock = FakeClock()
    profile = _profile(rate=20, mix=Mix(short=0, long=0, repeated=0, document=1, batch=0), max_tracked_jobs=0)
    result = await _drive(clock, _runner(FakeTarget(clock, latency_s=0.1), profile, clock).run())
    assert {r.job for r in result.records} == {"untracked"} and result.followups.polls == 0


async def test_refusals_without_retry_after_are_counted() -> None:
    clock = FakeClock()
    profile = _profile()
    result = await _drive(clock, _runner(FakeTarget(clock, shed_every=3, hinted=False), profile, clock).run())
    summary = summarize(result, profile)
    shed = summary["total"]["shed_429"]
    assert shed > 0 and summary["refusals"]["without_retry_after"] == shed
    assert not summary["checks"]["all_refusals_had_retry_after"]
    assert summary["total"]["degraded_answers"] == summary["total"]["accepted"]


async def test_the_target_is_sampled_every_second_and_progress_ticks() -> None:
    clock = FakeClock()
    ticks: list[float] = []
    profile = _profile(seconds=3.0)
    result = await _drive(clock, _runner(FakeTarget(clock), profile, clock,
                                         on_tick=lambda p: ticks.append(p.elapsed_s)).run())
    assert 3 <= len(result.samples) <= 6 and len(ticks) == len(result.samples)
    assert {s.degradation for s in result.samples} == {2.0} and result.samples[0].hits == 5.0
    assert result.scrape_failures == 0


async def test_tracked_jobs_are_spread_over_the_run() -> None:
    clock = FakeClock()
    profile = _profile(rate=40, seconds=3.0, mix=Mix(short=0, long=0, repeated=0, document=1, batch=1),
                       max_tracked_jobs=10)
    result = await _drive(clock, _runner(FakeTarget(clock, latency_s=0.1), profile, clock, drain_s=10.0).run())
    tracked = [r for r in result.records if r.job != "untracked"]
    assert result.job_sample_every == -(-len(result.records) // 10) and 5 <= len(tracked) <= 10
    assert tracked[0].at_s < 1.0 and tracked[-1].at_s > 2.0  # not just the first ten
    assert summarize(result, profile)["jobs"]["sample_every"] == result.job_sample_every
