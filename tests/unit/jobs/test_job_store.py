"""SQLite job store: atomic claims, chunked progress that survives reopening, recovery after a crash, a cost per
chunk independent of the job's size and progress, paged creates, text sealed at rest."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from peakgate.atrest import Sealer, StoreKeyError
from peakgate.jobs import store as store_module
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import NewJob
from peakgate.jobs.store import JobStoreError, SqliteJobStore, open_store

SEALER = Sealer.ephemeral()  # one key for every store on the same file


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
    seed = SqliteJobStore(path, sealer=SEALER)
    for i in range(40):
        seed.create(_batch(f"s{i}"))
    stores = [SqliteJobStore(path, sealer=SEALER), SqliteJobStore(path, sealer=SEALER)]
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
    crashed = SqliteJobStore(path, sealer=SEALER)
    job = crashed.create(_batch("one", "two"))
    assert crashed.claim_next() is not None
    crashed.save_chunk(job.id, [(0, "uno")], 3)
    # No close(): the process died with the job 'translating'.
    reopened = SqliteJobStore(path, sealer=SEALER)
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


class VmSteps:
    """Counts the SQLite virtual-machine instructions a store call runs: work done, with no timing involved."""

    def __init__(self, store: SqliteJobStore) -> None:
        self._db = store._db  # the store's own connection: its queries are what is counted
        self.steps = 0

    def _tick(self) -> int:
        self.steps += 1
        return 0

    def count(self, call: Callable[[], object]) -> int:
        self.steps = 0
        self._db.set_progress_handler(self._tick, 1)
        try:
            call()
        finally:
            self._db.set_progress_handler(None, 1)
        return self.steps


def test_a_chunk_costs_the_same_at_the_end_of_a_big_job_as_at_its_start(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db")
    job = store.create(_batch(*(f"line {i}" for i in range(20_000))))
    vm = VmSteps(store)

    def chunk_cost() -> int:
        pending = store.pending(job.id, 16)
        return vm.count(lambda: store.pending(job.id, 16)) + vm.count(
            lambda: store.save_chunk(job.id, [(i, text.upper()) for i, text in pending], 16))

    first = chunk_cost()
    store.save_chunk(job.id, [(i, "x") for i in range(16, 19_900)], 0)  # nearly the whole job translated
    last = chunk_cost()
    assert store.pending(job.id, 200) == [(i, f"line {i}") for i in range(19_916, 20_000)]
    # Walking the translated rows again (as a primary-key scan from index 0 did) costs ~20 steps per row.
    assert last <= first + 50, (first, last)


def _bytes_read() -> int:
    """Bytes this process has read through system calls, page cache hits included (Linux)."""
    return int(Path("/proc/self/io").read_text().split("rchar:")[1].split()[0])


def test_a_chunk_does_not_read_the_document(tmp_path: Path) -> None:
    def bytes_read_by_one_chunk(name: str, input_data: bytes) -> int:
        store = SqliteJobStore(tmp_path / name)
        store._db.execute("PRAGMA cache_size = -64")  # 64 KiB: whatever SQLite touches, it reads again
        job = store.create(NewJob(tenant="acme", kind="document", source="en", target="es", segments=("a", "b"),
                                  filename="d.txt", format="txt", input_data=input_data))
        store.save_chunk(job.id, [(0, "A")], 1)  # the first commit also checkpoints what `create` wrote
        before = _bytes_read()
        store.save_chunk(job.id, [(i, text.upper()) for i, text in store.pending(job.id, 1)], 1)
        store.get(job.id)
        return _bytes_read() - before

    small = bytes_read_by_one_chunk("small.db", b"a\nb\n")
    big = bytes_read_by_one_chunk("big.db", b"a\nb\n" + b"x" * 4_000_000)
    # The input in the job's own row made every progress update and status read walk all 4 MB of it.
    assert big <= small + 64 * 1024, (small, big)


class FailingSealer(Sealer):
    """Seals normally, but on the `fail_at`-th segment looks at the queue, then fails."""

    def __init__(self, fail_at: int) -> None:
        super().__init__(bytes(32))
        self.fail_at, self.calls = fail_at, 0
        self.store: SqliteJobStore | None = None
        self.claimed_while_loading: list[object] = []

    def seal_text(self, text: str, context: bytes) -> bytes:
        self.calls += 1
        if self.calls == self.fail_at:
            assert self.store is not None
            self.claimed_while_loading.append(self.store.claim_next())
            raise OSError("disk full")
        return super().seal_text(text, context)


def test_create_writes_pages_the_job_is_invisible_until_complete_and_a_failure_leaves_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "PAGE_ROWS", 2)
    sealer = FailingSealer(fail_at=4)  # pages of 2: the first page is committed when the 4th segment fails
    store = SqliteJobStore(tmp_path / "jobs.db", sealer=sealer)
    sealer.store = store
    with pytest.raises(OSError, match="disk full"):
        store.create(_batch("a", "b", "c", "d", "e"))
    assert sealer.claimed_while_loading == [None]
    with sqlite3.connect(tmp_path / "jobs.db") as db:
        assert db.execute("SELECT count(*) FROM jobs").fetchone() == (0,)
        assert db.execute("SELECT count(*) FROM segments").fetchone() == (0,)
    db.close()
    sealer.fail_at = 0
    job = store.create(_batch("a", "b", "c", "d", "e"))
    assert store.translations(job.id) == [None] * 5 and store.pending(job.id, 9) == list(enumerate("abcde"))


def test_recover_drops_a_job_a_crash_left_half_loaded(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db")
    job = store.create(_batch("a", "b"))
    store._db.execute("UPDATE jobs SET status = 'loading' WHERE id = ?", (job.id,))  # as a crash mid-create leaves it
    assert store.get(job.id) is None and store.claim_next() is None and store.input_data(job.id) is None
    assert store.recover() == 0
    assert store._db.execute("SELECT count(*) FROM segments").fetchone() == (0,)


def test_claim_next_passes_over_excluded_tenants(tmp_path: Path) -> None:
    store = SqliteJobStore(tmp_path / "jobs.db", wall=Wall())
    store.create(_batch("a1", tenant="a"))
    theirs = store.create(_batch("b1", tenant="b"))
    claimed = store.claim_next(exclude_tenants={"a"})
    assert claimed is not None and claimed.id == theirs.id
    assert store.claim_next(exclude_tenants={"a", "b"}) is None


def test_text_and_documents_are_sealed_at_rest(tmp_path: Path) -> None:
    path = tmp_path / "jobs.db"
    store = SqliteJobStore(path, sealer=SEALER)
    secret, phone = "alice@example.com", "+1 415 555 0100"
    job = store.create(NewJob(tenant="acme", kind="document", source="en", target="es",
                              segments=(f"mail {secret}", f"call {phone}"), filename="pii.txt", format="txt",
                              input_data=f"mail {secret}\ncall {phone}\n".encode()))
    store.save_chunk(job.id, [(0, f"correo {secret}"), (1, f"llama {phone}")], 10)
    store.finish(job.id, f"correo {secret}\nllama {phone}\n".encode())
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("jobs.db"))
    assert secret.encode() not in raw and phone.encode() not in raw
    assert store.translations(job.id) == [f"correo {secret}", f"llama {phone}"]
    assert store.output(job.id) == f"correo {secret}\nllama {phone}\n".encode()
    with pytest.raises(StoreKeyError):
        SqliteJobStore(path, sealer=Sealer.ephemeral()).output(job.id)  # another key opens nothing
