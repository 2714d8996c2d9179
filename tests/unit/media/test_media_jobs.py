"""Async media jobs: sync, async or 413; recognition feeding the job store; every failure recorded, never dropped;
the pool's waiting admission for a job's work."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TypeVar

import pytest

from peakgate.clock import FakeClock
from peakgate.domain import Principal
from peakgate.errors import BadRequest, Overloaded, QuotaExceeded
from peakgate.jobs.model import Job, NewJob
from peakgate.jobs.offload import AsyncJobStore
from peakgate.jobs.store import RECOGNITION_LOST, SqliteJobStore
from peakgate.media.jobs import Mode, Recognise, answer_mode, submit
from peakgate.media.pool import MediaPool
from peakgate.media.settings import MediaConfig
from peakgate.observe.metrics import Metrics

T = TypeVar("T")
WHO = Principal(key="k", tenant="acme", priority="interactive")


@pytest.mark.parametrize(("units", "asked_async", "jobs_enabled", "mode"), [
    (4.0, False, True, "sync"),  # at the cap: answered now
    (4.1, False, True, "async"),
    (1.0, True, True, "async"),  # asked for
    (4.1, False, False, "refuse"),  # too big to answer now, and no jobs to take it
    (1.0, True, False, "sync"),  # asked for a job where there are none: the answer itself still serves
])
def test_answer_mode(units: float, asked_async: bool, jobs_enabled: bool, mode: Mode) -> None:
    assert answer_mode(units, 4.0, asked_async=asked_async, jobs_enabled=jobs_enabled) == mode


async def _inline(call: Callable[[], T]) -> T:
    return call()


@dataclass
class Runner:
    store: AsyncJobStore
    wakes: int = 0

    def seconds_remaining(self, job: Job) -> int | None:
        return None

    def wake(self) -> None:
        self.wakes += 1


@dataclass
class Host:
    job_runner: Runner = field(default_factory=lambda: Runner(AsyncJobStore(SqliteJobStore(":memory:"), _inline)))
    refuse: Exception | None = None
    billed: list[int] = field(default_factory=list)

    async def check_job(self, segments: Sequence[str], source: str | None, target: str, principal: Principal
                        ) -> int:
        if self.refuse is not None:
            raise self.refuse
        return sum(map(len, segments))

    async def bill_job(self, principal: Principal, characters: int) -> None:
        self.billed.append(characters)


def _threads(concurrency: int) -> Executor:
    return ThreadPoolExecutor(concurrency)


def _pool(clock: FakeClock | None = None, **config: float) -> MediaPool:
    return MediaPool(MediaConfig.model_validate(config), clock or FakeClock(), Metrics(), lambda: 0,
                     executor=_threads)


JOB = NewJob(tenant="acme", kind="image", source="en", target="es", segments=(), input_data=b"image")


async def _settled(host: Host, job_id: str) -> Job:
    for _ in range(50):  # bounded: the background task needs a few loop turns, no real time
        job = await host.job_runner.store.get(job_id)
        assert job is not None
        if job.status != "recognising":
            return job
        await asyncio.sleep(0)
    raise AssertionError("the job never left 'recognising'")


async def test_recognised_text_is_checked_billed_and_queued_for_the_runner() -> None:
    host, pool = Host(), _pool()

    async def recognise() -> tuple[tuple[str, ...], bytes]:
        return ("Hello.", "World!"), b'{"layout": 1}'

    created = await submit(host, pool, JOB, WHO, recognise, max_recognising=4)
    assert created.status == "recognising" and created.segments_total == 0
    job = await _settled(host, created.id)
    store = host.job_runner.store
    assert job.status == "queued" and job.segments_total == 2
    assert await store.pending(job.id, 10) == [(0, "Hello."), (1, "World!")]
    assert await store.layout(job.id) == b'{"layout": 1}'
    assert host.billed == [12]
    assert host.job_runner.wakes == 1  # translated now, not at the runner's next idle poll
    await pool.close()


@pytest.mark.parametrize(("failure", "message"), [
    (BadRequest("the PNG image is truncated or corrupt"), "the PNG image is truncated or corrupt"),
    (RuntimeError("boom"), "internal error while recognising the file"),
])
async def test_a_failed_recognition_is_the_jobs_error(failure: Exception, message: str) -> None:
    host, pool = Host(), _pool()

    async def recognise() -> tuple[tuple[str, ...], bytes]:
        raise failure

    created = await submit(host, pool, JOB, WHO, recognise, max_recognising=4)
    job = await _settled(host, created.id)
    assert (job.status, job.error_message) == ("error", message)
    assert host.billed == []
    await pool.close()


async def test_a_refused_quota_fails_the_job_unbilled() -> None:
    host, pool = Host(refuse=QuotaExceeded("character quota exceeded")), _pool()
    created = await submit(host, pool, JOB, WHO, _recognises("Hi"), max_recognising=4)
    job = await _settled(host, created.id)
    assert (job.status, job.error_message, host.billed) == ("error", "character quota exceeded", [])
    await pool.close()


def _recognises(text: str) -> Recognise:
    async def recognise() -> tuple[tuple[str, ...], bytes]:
        return (text,), b"{}"

    return recognise


async def test_closing_the_pool_fails_the_jobs_still_recognising_and_caps_how_many_wait() -> None:
    host, pool = Host(), _pool()
    never = asyncio.Event()

    async def stuck() -> tuple[tuple[str, ...], bytes]:
        await never.wait()
        raise AssertionError("unreachable")

    first = await submit(host, pool, JOB, WHO, stuck, max_recognising=1)
    with pytest.raises(Overloaded):
        await submit(host, pool, JOB, WHO, stuck, max_recognising=1)
    await pool.close()
    job = await host.job_runner.store.get(first.id)
    assert job is not None and (job.status, job.error_message) == ("error", RECOGNITION_LOST)


async def test_a_jobs_work_waits_for_room_in_its_lane_instead_of_refusing() -> None:
    clock = FakeClock()
    pool = _pool(clock, max_queued_megapixels=10.0)
    release = threading.Event()
    busy = asyncio.create_task(pool.run("ocr", 8.0, release.wait, 5.0))
    await asyncio.sleep(0)  # its first step takes its 8 megapixels
    with pytest.raises(Overloaded):
        await pool.run("ocr", 4.0, pow, 2, 2)  # a request with a client waiting: refused at once
    waiting = asyncio.create_task(pool.run("ocr", 4.0, pow, 2, 2, wait=True))
    for _ in range(50):
        await asyncio.sleep(0)
        if clock.sleepers:
            break
    assert clock.sleepers == 1 and not waiting.done()  # parked on the clock, holding no units
    release.set()
    assert await busy is True
    clock.advance(60.0)
    assert await waiting == 4
    await pool.close()


def test_a_job_left_recognising_by_a_crash_is_failed_at_start_up() -> None:
    store = SqliteJobStore(":memory:")
    job = store.create(JOB)
    batch = store.create(NewJob(tenant="acme", kind="batch", source="en", target="es", segments=("a",)))
    store.recover()
    failed, queued = store.get(job.id), store.get(batch.id)
    assert failed is not None and (failed.status, failed.error_message) == ("error", RECOGNITION_LOST)
    assert queued is not None and queued.status == "queued"
