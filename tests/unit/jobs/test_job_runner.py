"""JobRunner on a FakeClock: chunks, pause/resume, retries, failures, resume after restart, turns across jobs
and tenants, store calls off the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

import pytest

from peakgate.atrest import Sealer
from peakgate.clock import FakeClock
from peakgate.domain import Principal, TranslateRequest, TranslateResult, Translation
from peakgate.errors import BadRequest, EngineCrashed, Overloaded, UnsupportedPair
from peakgate.jobs import runner as runner_module
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import Job, NewJob
from peakgate.jobs.runner import JobRunner, via_pipeline
from peakgate.jobs.store import SqliteJobStore
from peakgate.jobs.trim import release_freed_memory

T = TypeVar("T")
SEALER = Sealer.ephemeral()  # one key for every store on the same file
CONFIG = JobsConfig(chunk_segments=2, retry_initial_s=1.0, retry_max_s=4.0, pause_poll_s=0.5, idle_poll_s=10.0)


async def inline(call: Callable[[], T]) -> T:
    """Store calls run on the loop, in step with the FakeClock (the server runs them on worker threads)."""
    return call()


class FakeTranslate:
    """Upper-cases; `failures` are raised one per call first; `clock_cost_s` advances the FakeClock per segment."""

    def __init__(self, clock: FakeClock, failures: Sequence[Exception] = (), clock_cost_s: float = 1.0) -> None:
        self.clock = clock
        self.failures = list(failures)
        self.clock_cost_s = clock_cost_s
        self.calls: list[list[str]] = []
        self.gate: asyncio.Event | None = None  # when set, each call waits for it

    async def __call__(self, segments: Sequence[str], job: Job) -> list[str]:
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
    return SqliteJobStore(tmp_path / "jobs.db", sealer=SEALER)


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
    runner = JobRunner(store, translate, clock, config=CONFIG, offload=inline)
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
    runner = JobRunner(store, FakeTranslate(clock), clock, config=CONFIG, offload=inline)
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
    runner = JobRunner(store, translate, clock, config=CONFIG, should_pause=lambda: busy[0], offload=inline)
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
    runner = JobRunner(store, translate, clock, config=CONFIG, offload=inline)
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
    runner = JobRunner(store, FakeTranslate(clock, failures=[error]), clock, config=CONFIG, offload=inline)
    job = _job(store)
    failed = await runner.run_next()
    assert failed is not None and (failed.status, failed.error_message) == ("error", str(error))
    assert store.get(job.id) == failed


async def test_a_wrong_number_of_translations_fails_the_job(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()

    async def short(segments: Sequence[str], job: Job) -> list[str]:
        return ["x"]

    runner = JobRunner(store, short, clock, config=CONFIG, offload=inline)
    _job(store)
    failed = await runner.run_next()
    assert failed is not None and failed.status == "error"
    assert "1 translations for 2 segments" in (failed.error_message or "")


async def test_a_new_runner_on_the_same_file_resumes_without_redoing_chunks(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    store_a, clock = SqliteJobStore(path, sealer=SEALER), FakeClock()
    translate_a = FakeTranslate(clock)
    runner_a = JobRunner(store_a, translate_a, clock, config=CONFIG, offload=inline)
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
    store_b = SqliteJobStore(path, sealer=SEALER)
    translate_b = FakeTranslate(clock)
    runner_b = JobRunner(store_b, translate_b, clock, config=CONFIG, offload=inline)
    finished = await runner_b.run_next()
    assert finished is not None and (finished.status, finished.segments_done, finished.billed_characters) == (
        "done", 6, 12)
    assert translate_b.calls == [["s2", "s3"], ["s4", "s5"]]  # chunk one was kept, never redone
    assert store_b.translations(job.id) == [f"S{i}" for i in range(6)]


async def test_document_jobs_are_rebuilt_by_their_codec(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    runner = JobRunner(store, FakeTranslate(clock), clock, config=CONFIG, offload=inline)
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
    job = Job("J", "K", "acme", "document", "translating", None, "es", "a.txt", "txt", 0, 2, 0, None, 0.0, 0.0,
              glossary_id="g-1")
    assert await translate(["ab", "cd"], job) == ["ba", "dc"]
    request, principal = seen[0]
    assert (request.segments, request.source, request.target, request.priority, request.glossary_id) == (
        ("ab", "cd"), None, "es", "batch", "g-1")  # the job's glossary applies to every chunk
    assert (principal.tenant, principal.priority) == ("acme", "batch")


def _tenant_job(store: SqliteJobStore, tenant: str, n: int, prefix: str) -> Job:
    return store.create(NewJob(tenant=tenant, kind="batch", source="en", target="es",
                               segments=tuple(f"{prefix}{i}" for i in range(n))))


async def test_another_tenants_small_job_finishes_long_before_a_big_one_queued_first(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    translate = FakeTranslate(clock)
    runner = JobRunner(store, translate, clock, config=CONFIG, offload=inline)
    big = _tenant_job(store, "a", 40, "big")
    small = _tenant_job(store, "b", 3, "small")
    await runner.start()
    await settle(lambda: _status(store, big) == "done")
    assert _status(store, small) == "done"
    # Chunk by chunk in turns: the small job's last chunk is the 4th of 22, not the last one.
    assert translate.calls[:4] == [["big0", "big1"], ["small0", "small1"], ["big2", "big3"], ["small2"]]
    assert len(translate.calls) == 22
    await runner.close()


async def test_a_tenants_backlog_waits_behind_its_cap_while_other_tenants_run(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    translate = FakeTranslate(clock)
    config = CONFIG.model_copy(update={"max_active_jobs_per_tenant": 1})
    runner = JobRunner(store, translate, clock, config=config, offload=inline)
    first, later = _tenant_job(store, "a", 4, "a1-"), _tenant_job(store, "a", 2, "a2-")
    other = _tenant_job(store, "b", 2, "b-")
    await runner.start()
    await settle(lambda: _status(store, later) == "done")
    sent = [segment for call in translate.calls for segment in call]
    assert sent == ["a1-0", "a1-1", "b-0", "b-1", "a1-2", "a1-3", "a2-0", "a2-1"]
    assert [_status(store, job) for job in (first, later, other)] == ["done"] * 3
    await runner.close()


async def test_close_hands_every_job_in_the_rotation_back_to_the_queue(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    translate = FakeTranslate(clock)
    translate.gate = asyncio.Event()  # the first chunk hangs in flight
    runner = JobRunner(store, translate, clock, config=CONFIG, offload=inline)
    jobs = [_tenant_job(store, "a", 4, "a"), _tenant_job(store, "b", 4, "b")]
    await runner.start()
    await settle(lambda: len(translate.calls) == 1)
    assert [_status(store, job) for job in jobs] == ["translating"] * 2
    await runner.close()
    assert [_status(store, job) for job in jobs] == ["queued"] * 2


async def test_submit_stores_the_job_and_wakes_the_workers(tmp_path: Path) -> None:
    store, clock = _store(tmp_path), FakeClock()
    runner = JobRunner(store, FakeTranslate(clock), clock, config=CONFIG, offload=inline)
    await runner.start()
    await settle(lambda: clock.sleepers == 1)  # idle, parked on the 10 s poll
    job = await runner.submit(NewJob(tenant="acme", kind="batch", source="en", target="es", segments=("x", "y")))
    await settle(lambda: _status(store, job) == "done")
    assert store.translations(job.id) == ["X", "Y"]  # without the clock moving: woken, not polled
    await runner.close()


class ThreadRecorder:
    """A store that notes which thread each call ran on."""

    def __init__(self, store: SqliteJobStore) -> None:
        self._store = store
        self.threads: list[int] = []

    def __getattr__(self, name: str) -> Callable[..., object]:
        method = getattr(self._store, name)

        def call(*args: object, **kwargs: object) -> object:
            self.threads.append(threading.get_ident())
            return method(*args, **kwargs)

        return call


async def test_store_calls_run_on_worker_threads_not_the_event_loop(tmp_path: Path) -> None:
    clock = FakeClock()
    store = _store(tmp_path)
    recorder = ThreadRecorder(store)
    runner = JobRunner(recorder, FakeTranslate(clock), clock, config=CONFIG)  # type: ignore[arg-type]
    job = await runner.submit(NewJob(tenant="acme", kind="document", source="en", target="es", segments=("a", "b"),
                                     filename="d.txt", format="txt", input_data=b"a\nb\n"))
    done = await runner.run_next()
    assert done is not None and done.status == "done" and store.output(job.id) == b"A\nB\n"
    assert len(recorder.threads) >= 6  # create, claim, pending x2, save, input and translations, finish
    assert threading.get_ident() not in recorder.threads


async def test_memory_is_handed_back_after_a_big_document_only(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    trims: list[None] = []
    monkeypatch.setattr(runner_module, "TRIM_AFTER_SEGMENTS", 3)
    monkeypatch.setattr(runner_module, "release_freed_memory", lambda: trims.append(None))
    store, clock = _store(tmp_path), FakeClock()
    runner = JobRunner(store, FakeTranslate(clock), clock, config=CONFIG, offload=inline)
    for lines in (["a", "b"], ["a", "b", "c"]):
        store.create(NewJob(tenant="acme", kind="document", source="en", target="es", segments=tuple(lines),
                            filename="d.txt", format="txt", input_data="\n".join(lines).encode()))
        await runner.run_next()
    _job(store, 5)  # a batch job: no document was rebuilt
    await runner.run_next()
    assert len(trims) == 1
    release_freed_memory()  # the real one: harmless wherever it runs
