"""The open-loop sender: every arrival goes out at its scheduled time, however many are still unanswered.

Closed-loop clients wait for an answer before sending again, so an overloaded server slows its own load down
and hides the overload; here the schedule is fixed before the run. Outstanding requests are capped to protect
the generator (memory, sockets): an arrival that finds the cap full is recorded as generator-dropped, never
left out. The run stops by itself: arrivals end at the profile's duration, then in-flight requests and job
polls get at most `drain_s` before they are cancelled and recorded as such.
"""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Protocol
from urllib.parse import quote, urlencode

from peakgate.clock import Clock
from peakgate.drills.mix import Planned
from peakgate.drills.profile import SurgeProfile
from peakgate.drills.records import (
    CANCELLED,
    CONN_ERROR,
    DROPPED,
    SHED,
    TIMEOUT,
    FollowUps,
    Progress,
    Record,
    RunResult,
    Tally,
)
from peakgate.drills.scrape import Sample, parse
from peakgate.drills.wire import Call, Reply
from peakgate.errors import PeakgateError

_DRAIN_STEP_S = 0.1
_METRICS = Call("GET", "/metrics", ())
_JOB_KINDS = ("document", "batch")


class Transport(Protocol):
    async def send(self, call: Call, timeout_s: float) -> Reply: ...


class Runner:
    def __init__(self, transport: Transport, plans: Sequence[Planned], profile: SurgeProfile, clock: Clock, *,
                 target: str, seed: int, max_outstanding: int = 4000, drain_s: float = 30.0,
                 sample_every_s: float = 1.0, on_tick: Callable[[Progress], object] | None = None) -> None:
        self._transport = transport
        self._plans = plans
        self._profile = profile
        self._clock = clock
        self._target, self._seed = target, seed
        self._max_outstanding = max_outstanding
        self._drain_s = drain_s
        self._sample_every_s = sample_every_s
        self._on_tick = on_tick
        self._inflight: set[asyncio.Task[None]] = set()
        self._records: list[Record] = []
        self._followups = FollowUps()
        self._samples: list[Sample] = []
        self._scrape_failures = 0
        self._tracked_jobs = 0
        self._track_every, self._to_track = _job_sample(plans, profile.timeouts.max_tracked_jobs)
        self._tally = Tally()
        self._max_lag = 0.0
        self._start = 0.0

    async def run(self) -> RunResult:
        started_at = datetime.now(UTC).isoformat(timespec="seconds")
        self._start = self._clock.now()
        duration = self._profile.phases.total_s
        sampler = asyncio.create_task(self._sample())
        try:
            await self._send_all()
            await self._sleep_until(duration)
            await self._drain(duration + self._drain_s)
        finally:
            sampler.cancel()
            await asyncio.gather(sampler, return_exceptions=True)
            await self._cancel_inflight()
        return RunResult(self._target, self._profile.name, self._seed, started_at, duration, self._drain_s,
                         self._elapsed(), self._max_lag, self._records, self._followups, self._samples,
                         self._scrape_failures, self._track_every)

    def _elapsed(self) -> float:
        return self._clock.now() - self._start

    async def _sleep_until(self, at_s: float) -> None:
        delay = at_s - self._elapsed()
        if delay > 0:
            await self._clock.sleep(delay)

    async def _send_all(self) -> None:
        for plan in self._plans:
            await self._sleep_until(plan.arrival.at_s)
            self._max_lag = max(self._max_lag, self._elapsed() - plan.arrival.at_s)
            a = plan.arrival
            record = Record(a.index, plan.kind, plan.klass, plan.tenant, a.phase, a.at_s, plan.segments)
            self._records.append(record)
            self._tally.offered += 1
            if len(self._inflight) >= self._max_outstanding:
                record.status = DROPPED
                self._tally.finished(record)
                continue
            task = asyncio.create_task(self._one(plan, record))
            self._inflight.add(task)
            task.add_done_callback(self._inflight.discard)

    async def _drain(self, deadline_s: float) -> None:
        # Bounded: one pass per drain step until the deadline, fewer if everything is answered first.
        for _ in range(math.ceil(self._drain_s / _DRAIN_STEP_S) + 1):
            remaining = deadline_s - self._elapsed()
            if not self._inflight or remaining <= 0:
                return
            await self._clock.sleep(min(_DRAIN_STEP_S, remaining))

    async def _cancel_inflight(self) -> None:
        tasks = list(self._inflight)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for record in self._records:
            if record.status is None:
                record.status = CANCELLED
                self._tally.finished(record)
            elif record.job is None and record.kind in _JOB_KINDS and record.accepted:
                record.job = "pending"

    async def _exchange(self, call: Call, timeout_s: float) -> Reply | int:
        """The reply, or TIMEOUT / CONN_ERROR: a failed exchange is an outcome, never an exception."""
        try:
            return await self._transport.send(call, timeout_s)
        except TimeoutError:
            return TIMEOUT
        except (OSError, PeakgateError, asyncio.IncompleteReadError, ValueError):
            return CONN_ERROR

    async def _one(self, plan: Planned, record: Record) -> None:
        t = self._profile.timeouts
        reply = await self._exchange(plan.call, t.submit_s if plan.kind in _JOB_KINDS else t.translate_s)
        record.latency_s = self._elapsed() - record.at_s
        if isinstance(reply, int):
            record.status = reply
        else:
            record.status = reply.status
            record.retry_after = "retry-after" in reply.headers
            record.degraded = reply.headers.get("x-peakgate-degraded")
        self._tally.finished(record)
        if plan.kind in _JOB_KINDS and record.accepted and not isinstance(reply, int):
            await self._follow(plan, record, reply)

    async def _follow(self, plan: Planned, record: Record, reply: Reply) -> None:
        """Poll the job's status until done or error (bounded by the drain's end: cancelled there)."""
        poll = _poll_call(plan, reply)
        if poll is None:
            record.job = "error"  # accepted, but the answer named no job to follow
            return
        if record.index not in self._to_track or self._tracked_jobs >= self._profile.timeouts.max_tracked_jobs:
            record.job = "untracked"
            return
        self._tracked_jobs += 1
        try:
            await self._poll(poll, record)
        finally:
            self._tracked_jobs -= 1

    async def _poll(self, poll: Call, record: Record) -> None:
        t = self._profile.timeouts
        interval = t.poll_interval_s
        horizon = self._profile.phases.total_s + self._drain_s
        for _ in range(math.ceil(horizon / t.poll_interval_s) + 1):  # cancelled at the drain's end anyway
            await self._clock.sleep(interval)
            reply = await self._exchange(poll, t.translate_s)
            self._followups.polls += 1
            if isinstance(reply, int) or reply.status not in (200, *SHED):
                self._followups.errors += 1
            elif reply.status in SHED:
                self._followups.refusals += 1
                self._followups.refusals_with_retry_after += "retry-after" in reply.headers
            elif (state := _job_status(reply.body)) in ("done", "error"):
                record.job = state
                record.job_s = self._elapsed() - record.at_s
                return
            interval = min(interval * 2, t.poll_interval_s * 4)

    async def _sample(self) -> None:
        horizon = self._profile.phases.total_s + self._drain_s
        for _ in range(math.ceil(horizon / self._sample_every_s) + 2):  # run() cancels it once the drain is over
            reply = await self._exchange(_METRICS, max(self._sample_every_s * 2, 2.0))
            now = self._elapsed()
            try:
                if isinstance(reply, int) or reply.status != 200:
                    raise ValueError("no metrics")
                self._samples.append(parse(reply.body.decode("utf-8", "replace"), now))
            except ValueError:
                self._scrape_failures += 1
            if self._on_tick is not None:
                self._on_tick(Progress(now, self._profile.rate_at(now), self._tally, self._tally.recent_p99(now)))
            await self._clock.sleep(max(0.0, self._sample_every_s - (self._elapsed() - now)))


def _job_sample(plans: Sequence[Planned], most: int) -> tuple[int, frozenset[int]]:
    """Every k-th job's arrival index, k the smallest that keeps the count at `most` or under (0: none)."""
    jobs = [p.arrival.index for p in plans if p.kind in _JOB_KINDS]
    if most <= 0 or not jobs:
        return 0, frozenset()
    every = math.ceil(len(jobs) / most)
    return every, frozenset(jobs[::every])


def _poll_call(plan: Planned, reply: Reply) -> Call | None:
    """The status request for an accepted job; ids are quoted into one path segment, keeping it on the target."""
    try:
        body = json.loads(reply.body)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    auth = next(((n, v) for n, v in plan.call.headers if n == "Authorization"), None)
    headers = (auth,) if auth else ()
    if plan.kind == "document" and isinstance(body.get("document_id"), str):
        form = urlencode({"document_key": str(body.get("document_key", ""))}).encode()
        return Call("POST", f"/v2/document/{quote(body['document_id'], safe='')}",
                    (*headers, ("Content-Type", "application/x-www-form-urlencoded")), form)
    if plan.kind == "batch" and isinstance(body.get("job_id"), str):
        return Call("GET", f"/v1/jobs/{quote(body['job_id'], safe='')}", headers)
    return None


def _job_status(body: bytes) -> str | None:
    try:
        status = json.loads(body).get("status")
    except (ValueError, AttributeError):
        return None
    return status if isinstance(status, str) else None
