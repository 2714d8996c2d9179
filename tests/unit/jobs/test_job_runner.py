"""JobRunner on a FakeClock: chunks, pause/resume, transient retries, permanent failures, resume after restart."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from peakgate.clock import FakeClock
from peakgate.domain import Principal, TranslateRequest, TranslateResult, Translation
from peakgate.errors import BadRequest, EngineCrashed, Overloaded, UnsupportedPair
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import Job, NewJob
from peakgate.jobs.runner import JobRunner, via_pipeline
from peakgate.jobs.store import SqliteJobStore

CONFIG = JobsConfig(chunk_segments=2, retry_initial_s=1.0, retry_max_s=4.0, pause_poll_s=0.5, idle_poll_s=10.0)


class FakeTranslate:
    """Upper-cases; `failures` are raised one per call first; `clock_cost_s` advances the FakeClock per segment."""

    def __init__(self, clock: FakeClock, failures: Sequence[Exception] = (), clock_cost_s: float = 1.0) -> None:
        self.clock = clock
        self.failures = list(failures)
        self.clock_cost_s = clock_cost_s
        self.calls: list[list[str]] = []
        self.gate: asyncio.Event | None = None  # when set, each call waits for it

    async def __call__(self, segments: Sequence[str], source: str | None, target: str, tenant: str) -> list[str]:
        self.calls.append(list(segments))
        if self.gate is not None:
            await self.gate.wait()
        if self.failures:
            raise self.failures.pop(0)
        self.clock.advance(self.clock_cost_s * len(segments))
        return [s.upper() for s in segments]


async def settle(until: Callable[[], bool] = lambda: False, rounds: int = 200) -> None:
    """Let the background tasks run (no real time passes) until `until()` or the rounds run out."""
    for _ in range(rounds):
        if until():
            return
        await asyncio.sleep(0)


def _store(tmp_path: Path) -> SqliteJobStore:
    return SqliteJobStore(tmp_path / "jobs.db")


def _job(store: SqliteJobStore, n: int = 5) -> Job:
    return store.create(NewJob(tenant="acme", kind="batch", source="en", target="es",
                               segments=tuple(f"s{i}" for i in range(n))))


def _status(store: SqliteJobStore, job: Job) -> str:
    found = store.get(job.id)
    assert found is not None
    return found.status


async def test_runs_a_job_in_chunks_and_estimates_the_rest(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    translate = FakeTranslate(clock, clock_cost_s=1.0)
    runner = JobRunner(store, translate, clock, config=CONFIG)
    job = _job(store)
    assert runner.seconds_remaining(job) is None  # nothing measured yet
    done = await runner.run_next()
    assert done is not None and (done.status, done.segments_done, done.billed_characters) == ("done", 5, 10)
    assert translate.calls == [["s0", "s1"], ["s2", "s3"], ["s4"]]
    assert store.translations(job.id) == ["S0", "S1", "S2", "S3", "S4"]
    assert runner.throughput.segments_per_s is not None
    assert runner.seconds_remaining(_job(store, 10)) == 10  # measured at 1 segment per second
    assert runner.seconds_remaining(done) is None


async def test_background_workers_pick_up_woken_jobs_and_close_cleanly(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    runner = JobRunner(store, FakeTranslate(clock), clock, config=CONFIG)
    assert await runner.start() == 0
    job = _job(store)
    runner.wake()
    await settle(lambda: _status(store, job) == "done")
    assert _status(store, job) == "done"
    await runner.close()


async def test_pauses_between_chunks_while_interactive_load_is_high(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    translate = FakeTranslate(clock, clock_cost_s=0.0)
    busy = [False]
    runner = JobRunner(store, translate, clock, config=CONFIG, should_pause=lambda: busy[0])
    job = _job(store, 4)
    translate.gate = asyncio.Event()
    task = asyncio.create_task(runner.run_next())
    await settle(lambda: len(translate.calls) == 1)
    busy[0] = True  # load rises while the first chunk is in flight
    translate.gate.set()
    await settle(lambda: clock.sleepers == 1)
    assert len(translate.calls) == 1 and clock.sleepers == 1  # parked on the clock, not dropped
    clock.advance(0.5)
    await settle(rounds=20)
    assert len(translate.calls) == 1  # still busy: still paused
    busy[0] = False
    clock.advance(0.5)
    finished = await task
    assert finished is not None and finished.status == "done" and len(translate.calls) == 2
    assert store.translations(job.id) == ["S0", "S1", "S2", "S3"]


async def test_transient_failures_are_retried_with_backoff(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    translate = FakeTranslate(clock, failures=[Overloaded("slow", retry_after_s=3.0), EngineCrashed("boom"),
                                               Overloaded("busy", retry_after_s=100.0)])
    runner = JobRunner(store, translate, clock, config=CONFIG)
    job = _job(store, 2)
    task = asyncio.create_task(runner.run_next())
    # retry_after beats the 1s first step; then 2s (doubled); then the 4s cap beats a huge retry_after.
    for expected_delay in (3.0, 2.0, 4.0):
        await settle(lambda: clock.sleepers == 1)
        assert clock.sleepers == 1
        clock.advance(expected_delay - 0.01)
        await settle(rounds=5)
        assert clock.sleepers == 1  # not before the backoff is up
        clock.advance(0.01)
    finished = await task
    assert finished is not None and finished.status == "done"
    assert store.translations(job.id) == ["S0", "S1"]


@pytest.mark.parametrize("error", [UnsupportedPair("no model translates en → xx"), BadRequest("segment too long")])
async def test_permanent_failure_marks_the_job_error(tmp_path: Path, error: Exception) -> None:
    store, clock = _store(tmp_path), FakeClock()
    runner = JobRunner(store, FakeTranslate(clock, failures=[error]), clock, config=CONFIG)
    job = _job(store)
    failed = await runner.run_next()
    assert failed is not None and (failed.status, failed.error_message) == ("error", str(error))
    assert store.get(job.id) == failed


async def test_a_wrong_number_of_translations_fails_the_job(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()

    async def short(segments: Sequence[str], source: str | None, target: str, tenant: str) -> list[str]:
        return ["x"]

    runner = JobRunner(store, short, clock, config=CONFIG)
    _job(store)
    failed = await runner.run_next()
    assert failed is not None and failed.status == "error"
    assert "1 translations for 2 segments" in (failed.error_message or "")


async def test_a_new_runner_on_the_same_file_resumes_without_redoing_chunks(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    store_a, clock = SqliteJobStore(path), FakeClock()
    translate_a = FakeTranslate(clock)
    runner_a = JobRunner(store_a, translate_a, clock, config=CONFIG)
    job = _job(store_a, 6)
    first_chunk = translate_a.gate = asyncio.Event()
    await runner_a.start()
    runner_a.wake()
    await settle(lambda: len(translate_a.calls) == 1)
    translate_a.gate = asyncio.Event()  # the second chunk will hang in flight...
    first_chunk.set()
    await settle(lambda: len(translate_a.calls) == 2)
    await runner_a.close()  # ...and is cancelled there
    assert _status(store_a, job) == "queued"
    store_b = SqliteJobStore(path)
    translate_b = FakeTranslate(clock)
    runner_b = JobRunner(store_b, translate_b, clock, config=CONFIG)
    finished = await runner_b.run_next()
    assert finished is not None and (finished.status, finished.segments_done, finished.billed_characters) == (
        "done", 6, 12)
    assert translate_b.calls == [["s2", "s3"], ["s4", "s5"]]  # chunk one was kept, never redone
    assert store_b.translations(job.id) == [f"S{i}" for i in range(6)]


async def test_document_jobs_are_rebuilt_by_their_codec(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    runner = JobRunner(store, FakeTranslate(clock), clock, config=CONFIG)
    data = b"one\n\ntwo\n"
    job = store.create(NewJob(tenant="acme", kind="document", source="en", target="es", segments=("one", "two"),
                              filename="a.txt", format="txt", input_data=data))
    await runner.run_next()
    assert store.output(job.id) == b"ONE\n\nTWO\n"


async def test_via_pipeline_sends_batch_priority_for_the_tenant() -> None:
    seen: list[tuple[TranslateRequest, Principal]] = []

    async def service_translate(request: TranslateRequest, principal: Principal) -> TranslateResult:
        seen.append((request, principal))
        return TranslateResult(tuple(Translation(s[::-1], "en", "m", "t") for s in request.segments), 0)

    translate = via_pipeline(service_translate)
    assert await translate(["ab", "cd"], None, "es", "acme") == ["ba", "dc"]
    request, principal = seen[0]
    assert (request.segments, request.source, request.target, request.priority) == (("ab", "cd"), None, "es",
                                                                                      "batch")
    assert (principal.tenant, principal.priority) == ("acme", "batch")
