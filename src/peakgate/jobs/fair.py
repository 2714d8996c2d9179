"""Turn-taking between running jobs: one chunk per turn, tenants in rotation, each tenant's jobs in rotation.

So a small document submitted behind a huge one finishes in about the time its own chunks take, and a tenant
with many jobs gets the same share as a tenant with one. A job is out while its chunk is in flight: it never
has two chunks at once, since `pending` would hand both the same segments.
"""

from __future__ import annotations

from collections import OrderedDict, deque

from peakgate.jobs.model import Job


class FairQueue:
    def __init__(self) -> None:
        self._tenants: OrderedDict[str, deque[Job]] = OrderedDict()
        self._out: set[str] = set()

    def __len__(self) -> int:
        return sum(len(jobs) for jobs in self._tenants.values())

    def add(self, job: Job) -> None:
        self._tenants.setdefault(job.tenant, deque()).append(job)

    def take(self) -> Job | None:
        """The next job whose turn it is and that has no chunk in flight; None when every job is out."""
        for tenant, jobs in self._tenants.items():
            for _ in range(len(jobs)):
                job = jobs[0]
                jobs.rotate(-1)
                if job.id not in self._out:
                    self._out.add(job.id)
                    self._tenants.move_to_end(tenant)
                    return job
        return None

    def put_back(self, job: Job) -> None:
        """Its chunk is done and the job has more: it takes its next turn."""
        self._out.discard(job.id)

    def remove(self, job: Job) -> None:
        self._out.discard(job.id)
        jobs = self._tenants.get(job.tenant)
        if jobs is None:
            return
        self._tenants[job.tenant] = remaining = deque(j for j in jobs if j.id != job.id)
        if not remaining:
            del self._tenants[job.tenant]

    def full_tenants(self, cap: int) -> set[str]:
        """Tenants holding `cap` or more jobs: the next claim passes them over."""
        return {tenant for tenant, jobs in self._tenants.items() if len(jobs) >= cap}

    def drain(self) -> list[Job]:
        """Every job, emptied out (the runner stops and hands them back to the queue)."""
        jobs = [job for queue in self._tenants.values() for job in queue]
        self._tenants.clear()
        self._out.clear()
        return jobs
