"""Deferrable jobs: the store holds them back behind a `DeferralGate` (off-peak, or their latest start come), an
older database gains the columns, and the runner runs them off-peak or at their latest start, others first."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from peakgate.atrest import Sealer
from peakgate.clock import FakeClock
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import DeferralGate, Job, NewJob
from peakgate.jobs.runner import JobRunner
from peakgate.jobs.store import SqliteJobStore
from peakgate.observe.metrics import SERVING_ENDPOINT

T = TypeVar("T")
NOW = 1_800_000_000.0
CONFIG = JobsConfig(chunk_segments=10, idle_poll_s=1.0, defer_margin_s=60.0, defer_prior_segments_per_s=1.0)


def _new(*, deferrable: bool = False, latest_finish: float | None = None, n: int = 10) -> NewJob:
    return NewJob(tenant="acme", kind="batch", source="en", target="es", segments=tuple(f"s{i}" for i in range(n)),
                  deferrable=deferrable, latest_finish=latest_finish)


def _gate(off_peak: bool = False, now: float = NOW) -> DeferralGate:
    return DeferralGate(off_peak=off_peak, now_wall_s=now, s_per_segment=2.0, margin_s=60.0)


def test_a_deferrable_job_waits_for_off_peak_or_its_latest_start_and_others_pass_it(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db")
    later = store.create(_new(deferrable=True, latest_finish=NOW + 3600))  # 10 segments: 20 s of work
    normal = store.create(_new())
    assert later.deferrable and later.latest_finish == NOW + 3600
    claimed = store.claim_next(gate=_gate())
    assert claimed is not None and claimed.id == normal.id
    assert store.claim_next(gate=_gate()) is None  # held: not off-peak, latest start (NOW + 3520) to come
    assert store.claim_next(gate=_gate(now=NOW + 3519)) is None
    claimed = store.claim_next(gate=_gate(now=NOW + 3521))
    assert claimed is not None and claimed.id == later.id
    store.release(later.id)
    claimed = store.claim_next(gate=_gate(off_peak=True))
    assert claimed is not None and claimed.id == later.id
    store.release(later.id)
    assert store.claim_next() is not None  # no gate: nothing is held (callers that know nothing of deferral)


def test_an_older_database_gains_the_deferral_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    old = sqlite3.connect(path)
    old.executescript("""
        CREATE TABLE jobs (id TEXT PRIMARY KEY, key TEXT NOT NULL, tenant TEXT NOT NULL, kind TEXT NOT NULL,
            status TEXT NOT NULL, source TEXT, target TEXT NOT NULL, filename TEXT, format TEXT,
            billed_characters INTEGER NOT NULL DEFAULT 0, segments_total INTEGER NOT NULL,
            segments_done INTEGER NOT NULL DEFAULT 0, error_message TEXT, created_at REAL NOT NULL,
            updated_at REAL NOT NULL);
        INSERT INTO jobs VALUES ('j1', 'k', 'acme', 'batch', 'queued', 'en', 'es', NULL, NULL, 0, 0, 0, NULL, 1, 1);
    """)
    old.close()
    store = SqliteJobStore(path)
    job = store.get("j1")
    assert job is not None and not job.deferrable and job.latest_finish is None
    assert store.claim_next(gate=_gate()) is not None


def _status(store: SqliteJobStore, job_id: str) -> str:
    job = store.get(job_id)
    assert job is not None
    return job.status


class _Switch:
    def __init__(self) -> None:
        self.on = False
        self.asked = 0
        self.closed = False

    async def is_off_peak(self) -> bool:
        self.asked += 1
        return self.on

    async def close(self) -> None:
        self.closed = True


async def _inline(call: Callable[[], T]) -> T:
    return call()


async def _upper(segments: Sequence[str], job: Job) -> list[str]:
    return [s.upper() for s in segments]


async def _advance(clock: FakeClock, seconds: float) -> None:
    for _ in range(int(seconds * 10)):
        clock.advance(0.1)
        for _ in range(20):
            await asyncio.sleep(0)


async def test_the_runner_runs_deferred_work_off_peak_and_other_work_at_once(tmp_path: Path) -> None:
    store, clock, off_peak = SqliteJobStore(tmp_path / "jobs.db", sealer=Sealer.ephemeral()), FakeClock(), _Switch()
    runner = JobRunner(store, _upper, clock, config=CONFIG, offload=_inline, off_peak=off_peak, wall=lambda: NOW)
    deferred = store.create(_new(deferrable=True, latest_finish=NOW + 86_400))
    normal = store.create(_new())
    await runner.start()
    try:
        await _advance(clock, 2.0)
        assert [_status(store, j.id) for j in (deferred, normal)] == ["queued", "done"]
        off_peak.on = True
        await _advance(clock, 2.0)
        assert _status(store, deferred.id) == "done"
    finally:
        await runner.close()


async def test_the_runner_starts_a_deferred_job_at_its_latest_start_even_at_peak(tmp_path: Path) -> None:
    store, clock = SqliteJobStore(tmp_path / "jobs.db", sealer=Sealer.ephemeral()), FakeClock()
    wall = [NOW]
    runner = JobRunner(store, _upper, clock, config=CONFIG, offload=_inline, off_peak=_Switch(),
                       wall=lambda: wall[0])
    job = store.create(_new(deferrable=True, latest_finish=NOW + 1000))  # 10 s of work at the prior, 60 s margin
    await runner.start()
    try:
        await _advance(clock, 2.0)
        assert _status(store, job.id) == "queued"
        wall[0] = NOW + 931  # latest start: 1000 - 10 - 60
        await _advance(clock, 2.0)
        assert _status(store, job.id) == "done"
    finally:
        await runner.close()


async def test_job_work_is_labelled_jobs_and_the_runner_closes_its_off_peak_source(tmp_path: Path) -> None:
    store, clock, off_peak = SqliteJobStore(tmp_path / "jobs.db", sealer=Sealer.ephemeral()), FakeClock(), _Switch()
    endpoints: list[str] = []

    async def translate(segments: Sequence[str], job: Job) -> list[str]:
        endpoints.append(SERVING_ENDPOINT.get())
        return list(segments)

    runner = JobRunner(store, translate, clock, config=CONFIG, offload=_inline, off_peak=off_peak, wall=lambda: NOW)
    job = store.create(_new(n=25))  # three chunks
    await runner.start()
    try:
        await _advance(clock, 1.0)
        assert _status(store, job.id) == "done"
    finally:
        await runner.close()
    assert endpoints == ["jobs"] * 3 and SERVING_ENDPOINT.get() == "other"  # the runner's tasks, not ours
    assert off_peak.closed and off_peak.asked >= 1
