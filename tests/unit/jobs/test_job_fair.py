"""FairQueue: tenants take turns, a tenant's jobs take turns, a job with a chunk in flight is passed over."""

from __future__ import annotations

from peakgate.jobs.fair import FairQueue
from peakgate.jobs.model import Job


def _job(job_id: str, tenant: str) -> Job:
    return Job(job_id, "k", tenant, "batch", "translating", "en", "es", None, None, 0, 10, 0, None, 0.0, 0.0)


def _turns(queue: FairQueue, n: int) -> list[str]:
    taken = []
    for _ in range(n):
        job = queue.take()
        assert job is not None
        taken.append(job.id)
        queue.put_back(job)
    return taken


def test_tenants_alternate_whatever_their_number_of_jobs() -> None:
    queue = FairQueue()
    for job in (_job("a1", "a"), _job("a2", "a"), _job("a3", "a"), _job("b1", "b")):
        queue.add(job)
    assert _turns(queue, 6) == ["a1", "b1", "a2", "b1", "a3", "b1"]


def test_a_job_with_a_chunk_in_flight_is_passed_over() -> None:
    queue = FairQueue()
    a1, a2 = _job("a1", "a"), _job("a2", "a")
    queue.add(a1)
    queue.add(a2)
    assert queue.take() == a1
    assert queue.take() == a2
    assert queue.take() is None  # both out
    queue.put_back(a1)
    assert queue.take() == a1


def test_remove_full_tenants_and_drain() -> None:
    queue = FairQueue()
    jobs = [_job("a1", "a"), _job("a2", "a"), _job("b1", "b")]
    for job in jobs:
        queue.add(job)
    assert queue.full_tenants(2) == {"a"} and queue.full_tenants(1) == {"a", "b"}
    queue.remove(jobs[2])
    assert len(queue) == 2 and queue.full_tenants(1) == {"a"}
    taken = queue.take()
    assert taken is not None
    assert sorted(j.id for j in queue.drain()) == ["a1", "a2"]
    assert len(queue) == 0 and queue.take() is None
