"""SQLite job store: atomic claims, chunked progress that survives reopening, recovery after a crash."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import NewJob
from peakgate.jobs.store import JobStoreError, SqliteJobStore, open_store


class Wall:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1.0
        return self.now


def _batch(*segments: str, tenant: str = "acme") -> NewJob:
    return NewJob(tenant=tenant, kind="batch", source="en", target="es", segments=segments)


def test_create_and_get(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db", wall=Wall())
    job = store.create(NewJob(tenant="acme", kind="document", source=None, target="es", segments=("a", "b"),
                              filename="x.txt", format="txt", input_data=b"a\nb"))
    assert (job.status, job.segments_total, job.segments_done, job.billed_characters) == ("queued", 2, 0, 0)
    assert job.key and job.key != job.id
    assert job.created_at == job.updated_at == 1_700_000_001.0
    assert store.get(job.id) == job
    assert store.get("missing") is None
    assert store.input_data(job.id) == b"a\nb"
    assert store.output(job.id) is None
    assert store.translations(job.id) == [None, None]


def test_claim_next_is_fifo_and_hands_each_job_out_once(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db", wall=Wall())
    first, second = store.create(_batch("a")), store.create(_batch("b"))
    claimed = store.claim_next()
    assert claimed is not None and (claimed.id, claimed.status) == (first.id, "translating")
    other = store.claim_next()
    assert other is not None and other.id == second.id
    assert store.claim_next() is None


def test_concurrent_claims_from_two_connections_never_share_a_job(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    seed = SqliteJobStore(path)
    for i in range(40):
        seed.create(_batch(f"s{i}"))
    stores = [SqliteJobStore(path), SqliteJobStore(path)]
    claimed: list[list[str]] = [[], []]

    def drain(n: int) -> None:
        while (job := stores[n].claim_next()) is not None:
            claimed[n].append(job.id)

    threads = [threading.Thread(target=drain, args=(n,)) for n in (0, 1)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    every = claimed[0] + claimed[1]
    assert len(every) == len(set(every)) == 40


def test_chunks_commit_progress_and_a_replayed_chunk_is_not_counted_twice(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db")
    job = store.create(_batch("one", "two", "three"))
    assert store.pending(job.id, 2) == [(0, "one"), (1, "two")]
    after = store.save_chunk(job.id, [(0, "uno"), (1, "dos")], billed_characters=6)
    assert (after.segments_done, after.billed_characters) == (2, 6)
    replay = store.save_chunk(job.id, [(0, "UNO"), (1, "DOS")], billed_characters=6)
    assert (replay.segments_done, replay.billed_characters) == (2, 6)
    assert store.pending(job.id, 2) == [(2, "three")]
    assert store.translations(job.id) == ["uno", "dos", None]


def test_recover_after_a_crash_requeues_translating_jobs_with_their_progress(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    crashed = SqliteJobStore(path)
    job = crashed.create(_batch("one", "two"))
    assert crashed.claim_next() is not None
    crashed.save_chunk(job.id, [(0, "uno")], 3)
    # No close(): the process died with the job 'translating'.
    reopened = SqliteJobStore(path)
    assert reopened.recover() == 1
    resumed = reopened.get(job.id)
    assert resumed is not None and (resumed.status, resumed.segments_done) == ("queued", 1)
    assert reopened.pending(job.id, 10) == [(1, "two")]


def test_finish_fail_and_release(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db")
    done, failed, released = (store.create(_batch(s)) for s in "abc")
    for _ in range(3):
        store.claim_next()
    assert store.finish(done.id, b"out").status == "done"
    assert store.output(done.id) == b"out"
    failed_job = store.fail(failed.id, "no model translates en → xx")
    assert (failed_job.status, failed_job.error_message) == ("error", "no model translates en → xx")
    store.release(released.id)
    store.release(done.id)  # only a 'translating' job goes back to the queue
    assert [j.status for j in map(store.get, (done.id, released.id)) if j] == ["done", "queued"]
    assert store.recover() == 0


def test_store_errors_are_job_store_errors(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db")
    with pytest.raises(JobStoreError, match="does not exist"):
        store.finish("missing", None)
    store.close()
    with pytest.raises(JobStoreError):
        store.claim_next()
    with pytest.raises(JobStoreError, match="cannot open"):
        SqliteJobStore(tmp_path / "no" / "such" / "dir" / "jobs.db")


def test_factory_makes_the_folder_and_opens_in_wal_mode(tmp_path: Path) -> None:
    store = open_store(JobsConfig(), tmp_path / "sub" / "jobs.db")
    store.create(_batch("a"))
    store.close()
    assert (tmp_path / "sub" / "jobs.db").exists()
    assert sqlite3.connect(tmp_path / "sub" / "jobs.db").execute("PRAGMA journal_mode").fetchone() == ("wal",)
