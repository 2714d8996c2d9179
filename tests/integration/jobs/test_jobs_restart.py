"""A job survives its runner: stopped mid-way (cancelled) or killed (SIGKILL), a new runner on the same SQLite
file finishes it, and the document comes out complete, with no segment lost, duplicated or translated twice
once its chunk was committed."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from peakgate.atrest import Sealer
from peakgate.atrest.sealer import decode_key
from peakgate.clock import MonotonicClock
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.formats import codec_named
from peakgate.jobs.model import Job, NewJob
from peakgate.jobs.runner import JobRunner
from peakgate.jobs.store import SqliteJobStore

KEY = Sealer.new_key_text()  # every store on the file, in this process and the child, seals with it
SEALER = Sealer(decode_key(KEY))
LINES = 120
CONFIG = JobsConfig(chunk_segments=8, idle_poll_s=0.05)
DOCUMENT = "\n".join(f"line number {i}" if i % 10 else "" for i in range(LINES)).encode()
EXPECTED = "\n".join(f"LINE NUMBER {i}" if i % 10 else "" for i in range(LINES)).encode()

_CHILD = """
import asyncio, sys
from peakgate.atrest import Sealer
from peakgate.atrest.sealer import decode_key
from peakgate.clock import MonotonicClock
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.runner import JobRunner
from peakgate.jobs.store import SqliteJobStore

async def slow_upper(segments, job):
    await asyncio.sleep(0.05)
    return [s.upper() for s in segments]

async def main():
    store = SqliteJobStore(sys.argv[1], sealer=Sealer(decode_key(sys.argv[2])))
    runner = JobRunner(store, slow_upper, MonotonicClock(),
                       config=JobsConfig(chunk_segments=8, idle_poll_s=0.05))
    await runner.start()
    await asyncio.sleep(60)  # killed long before this

asyncio.run(main())
"""


class Recorder:
    def __init__(self, delay_s: float) -> None:
        self.delay_s = delay_s
        self.sent: list[str] = []

    async def __call__(self, segments: Sequence[str], job: Job) -> list[str]:
        self.sent.extend(segments)
        await asyncio.sleep(self.delay_s)
        return [s.upper() for s in segments]


def _submit(store: SqliteJobStore) -> Job:
    return store.create(NewJob(tenant="acme", kind="document", source="en", target="es",
                               segments=tuple(codec_named("txt").extract(DOCUMENT)), filename="doc.txt",
                               format="txt", input_data=DOCUMENT))


def _done(store: SqliteJobStore, job: Job) -> Job:
    found = store.get(job.id)
    assert found is not None
    return found


async def _until(store: SqliteJobStore, job: Job, done_at_least: int | None = None, timeout_s: float = 20.0) -> Job:
    """The job once `done_at_least` segments are committed, or (None) once it is done or failed: the last
    chunk's commit and the job's finish are two transactions."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        current = _done(store, job)
        if current.status in ("done", "error") or (done_at_least is not None
                                                   and current.segments_done >= done_at_least):
            return current
        await asyncio.sleep(0.01)
    raise AssertionError(f"job stuck at {_done(store, job)}")


async def _finish_with_runner_b(path: Path, job: Job) -> tuple[Recorder, Job]:
    store_b = SqliteJobStore(path, sealer=SEALER)
    recorder = Recorder(0.0)
    runner_b = JobRunner(store_b, recorder, MonotonicClock(), config=CONFIG)
    await runner_b.start()
    try:
        finished = await _until(store_b, job)
    finally:
        await runner_b.close()
    assert finished.status == "done"
    assert store_b.output(job.id) == EXPECTED
    assert store_b.translations(job.id) == [s.upper() for s in codec_named("txt").extract(DOCUMENT)]
    store_b.close()
    return recorder, finished


async def test_cancelled_runner_leaves_the_job_for_the_next_one(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    store_a = SqliteJobStore(path, sealer=SEALER)
    job = _submit(store_a)
    recorder_a = Recorder(0.02)
    runner_a = JobRunner(store_a, recorder_a, MonotonicClock(), config=CONFIG)
    await runner_a.start()
    partial = await _until(store_a, job, done_at_least=40)
    await runner_a.close()
    stopped = _done(store_a, job)
    assert stopped.status == "queued" and 40 <= stopped.segments_done < job.segments_total
    committed = [t for t in store_a.translations(job.id) if t is not None]
    store_a.close()
    recorder_b, finished = await _finish_with_runner_b(path, job)
    assert partial.segments_done >= 40
    assert len(recorder_b.sent) == job.segments_total - len(committed)  # committed chunks were not redone
    assert not {t.lower() for t in committed} & set(recorder_b.sent)
    assert finished.billed_characters == sum(len(s) for s in codec_named("txt").extract(DOCUMENT))


async def test_killed_process_is_recovered_by_the_next_runner(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    store = SqliteJobStore(path, sealer=SEALER)
    job = _submit(store)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    child = await asyncio.create_subprocess_exec(sys.executable, "-c", _CHILD, str(path), KEY, env=env)
    try:
        partial = await _until(store, job, done_at_least=24)
    finally:
        child.send_signal(signal.SIGKILL)  # no clean-up runs: the job stays 'translating', as after a crash
        await asyncio.wait_for(child.wait(), timeout=10)
    crashed = _done(store, job)
    assert crashed.status == "translating" and crashed.segments_done < job.segments_total
    store.close()
    recorder_b, _ = await _finish_with_runner_b(path, job)
    assert partial.segments_done >= 24
    assert len(recorder_b.sent) == job.segments_total - crashed.segments_done
