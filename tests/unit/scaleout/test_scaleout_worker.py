"""Worker and gateway together on in-memory streams and a FakeClock: batching across gateways, class order,
deadlines, malformed entries, a killed worker's entries reclaimed, duplicate replies dropped, drain, and a
worker whose model does not load."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from scaleout_fakes import (
    CONFIG,
    MODEL,
    Engine,
    FakeRedis,
    Wall,
    advance,
    make_gateway,
    make_worker,
    sample,
    settle,
)

from peakgate.clock import FakeClock
from peakgate.config import PriorityClass
from peakgate.errors import BadRequest, DeadlineExceeded
from peakgate.scaleout import codec
from peakgate.scaleout.cluster import decode_beat
from peakgate.scaleout.keys import Keys
from peakgate.scaleout.worker import Worker

KEYS = Keys(CONFIG.stream_prefix)


@dataclass
class Cluster:
    clock: FakeClock
    redis: FakeRedis
    runs: list[asyncio.Task[int]]

    async def worker(self, name: str, engine: Engine) -> Worker:
        worker, _ = make_worker(self.redis, name, engine)
        self.runs.append(asyncio.create_task(worker.run()))
        await settle()
        return worker

    def entry(self, text: str, priority: PriorityClass = "interactive", *, request_id: int = 1,
              within_s: float = 10.0) -> str:
        """Put an entry on the queue directly, as a gateway would; returns its id."""
        entry = codec.WorkEntry(request_id=request_id, gateway="gw", reply_to=KEYS.reply("gw"), model=MODEL,
                                source="en", target="es", priority=priority, segments=[text],
                                deadline_wall_s=Wall(self.clock).now() + within_s)
        return self.redis.add(KEYS.work(MODEL, priority), codec.encode(entry))

    def replies(self, gateway: str = "gw") -> list[codec.Reply]:
        stream = self.redis.stream(KEYS.reply(gateway))
        return [reply for payload in stream.entries.values() for reply in codec.decode_replies(payload)]

    def queued(self, priority: PriorityClass = "interactive") -> tuple[int, int]:
        """(entries still in the stream, of which pending)."""
        stream = self.redis.stream(KEYS.work(MODEL, priority))
        return len(stream.entries), len(stream.pending)


@pytest.fixture
async def cluster() -> AsyncIterator[Cluster]:
    clock = FakeClock(start=100.0)
    c = Cluster(clock, FakeRedis(clock), [])
    yield c
    for run in c.runs:
        run.cancel()
    await asyncio.gather(*c.runs, return_exceptions=True)


async def test_a_request_runs_on_a_worker_and_leaves_nothing_queued(cluster: Cluster) -> None:
    await cluster.worker("w1", Engine(cluster.clock))
    gateway, _, _ = make_gateway(cluster.redis, "g1")
    await gateway.start()
    call = asyncio.create_task(gateway.submit(MODEL, ["Hello there. Bye now.", " One "], "en", "es", "interactive",
                                              cluster.clock.now() + 3))
    await advance(cluster.clock, 0.1)
    assert call.result() == ["<Hello there.> <Bye now.>", " <One> "]  # split, batched and reassembled there
    assert cluster.queued() == (0, 0)  # answered, acknowledged and deleted
    await gateway.close()


async def test_entries_from_two_gateways_share_one_batch(cluster: Cluster) -> None:
    engine = Engine(cluster.clock)
    await cluster.worker("w1", engine)
    gateways = [make_gateway(cluster.redis, name)[0] for name in ("g1", "g2")]
    for gateway in gateways:
        await gateway.start()
    deadline = cluster.clock.now() + 3
    calls = [asyncio.create_task(g.submit(MODEL, [f"{g.gateway_id} a", f"{g.gateway_id} b"], "en", "es",
                                          "interactive", deadline)) for g in gateways]
    await advance(cluster.clock, 0.1)
    assert [c.result() for c in calls] == [["<g1 a>", "<g1 b>"], ["<g2 a>", "<g2 b>"]]
    assert engine.batches == [("g1 a", "g1 b", "g2 a", "g2 b")]  # the preferred size, from two gateways
    for gateway in gateways:
        await gateway.close()


async def test_a_worker_with_room_for_one_batch_reads_the_critical_class_first(cluster: Cluster) -> None:
    for n in range(4):
        cluster.entry(f"batch {n}", "batch", request_id=n)
    for n in range(4):
        cluster.entry(f"urgent {n}", "interactive", request_id=10 + n)
    engine = Engine(cluster.clock)
    engine.gate = asyncio.Event()  # hold the first batch: the worker is full
    await cluster.worker("w1", engine)
    await advance(cluster.clock, 0.05)
    assert engine.batches == [("urgent 0", "urgent 1", "urgent 2", "urgent 3")]
    assert cluster.queued("batch") == (4, 0)  # not even read: left for other workers
    engine.gate.set()
    await advance(cluster.clock, 0.1)
    assert engine.batches[1] == ("batch 0", "batch 1", "batch 2", "batch 3")


async def test_an_entry_read_past_its_deadline_is_acknowledged_and_failed_not_run(cluster: Cluster) -> None:
    cluster.entry("too late", within_s=-0.5)
    engine = Engine(cluster.clock)
    worker = await cluster.worker("w1", engine)
    await advance(cluster.clock, 0.05)
    assert engine.batches == []
    assert cluster.queued() == (0, 0)
    [reply] = cluster.replies()
    assert isinstance(codec.outcome(reply, 1), DeadlineExceeded)
    assert worker.counts.expired == 1


async def test_a_malformed_entry_is_acknowledged_counted_and_never_retried(cluster: Cluster) -> None:
    stream = KEYS.work(MODEL, "interactive")
    cluster.redis.add(stream, b"\xc1 not msgpack")
    cluster.redis.add(stream, None)  # no payload field at all
    future = codec.WorkEntry(v=99, request_id=7, gateway="gw", reply_to=KEYS.reply("gw"), model=MODEL, source="en",
                             target="es", priority="interactive", segments=["x"], deadline_wall_s=0.0)
    cluster.redis.add(stream, codec.encode(future))  # a newer schema: unreadable, but its sender can be told
    cluster.entry("fine", request_id=8)
    worker = await cluster.worker("w1", Engine(cluster.clock))
    await advance(cluster.clock, 3 * CONFIG.claim_idle_ms / 1000)  # long past any reclaim
    assert worker.counts.malformed == 3 and worker.counts.reclaimed == 0
    assert cluster.queued() == (0, 0)
    told, served = cluster.replies()
    assert told.request_id == 7 and isinstance(codec.outcome(told, 1), BadRequest)
    assert served.request_id == 8 and served.texts == ["<fine>"]


async def test_a_killed_workers_entry_is_reclaimed_and_its_caller_answered_once(cluster: Cluster) -> None:
    doomed = Engine(cluster.clock)
    doomed.gate = asyncio.Event()  # mid-batch when it dies
    worker_a, transport_a = make_worker(cluster.redis, "a", doomed)
    cluster.runs.append(asyncio.create_task(worker_a.run()))
    await settle()
    gateway, _, registry = make_gateway(cluster.redis, "g1")
    await gateway.start()
    call = asyncio.create_task(gateway.submit(MODEL, ["Save it"], "en", "es", "interactive", cluster.clock.now() + 10))
    await advance(cluster.clock, 0.05)
    assert doomed.batches == [("Save it",)] and cluster.queued() == (1, 1)
    resume = transport_a.freeze()  # kill -9: no more heartbeats, lease refreshes or acknowledgements
    worker_b = await cluster.worker("b", Engine(cluster.clock))
    await advance(cluster.clock, CONFIG.claim_idle_ms / 1000 + 2 * CONFIG.heartbeat_s)
    assert call.done() and call.result() == ["<Save it>"]
    assert worker_b.counts.reclaimed == 1
    # The "dead" worker comes back (a stall, not a death) and answers too: the gateway drops the duplicate.
    doomed.gate.set()
    resume.set()
    await advance(cluster.clock, 0.1)
    assert sample(registry, "peakgate_queue_replies_dropped_total", reason="unmatched") == 1
    assert cluster.queued() == (0, 0)
    await gateway.close()


async def test_a_live_worker_keeps_its_slow_batch_from_being_reclaimed(cluster: Cluster) -> None:
    slow = Engine(cluster.clock, delay_s=3 * CONFIG.claim_idle_ms / 1000)
    await cluster.worker("slow", slow)
    cluster.entry("long one")
    await advance(cluster.clock, 0.05)
    other = await cluster.worker("other", Engine(cluster.clock))
    await advance(cluster.clock, 3 * CONFIG.claim_idle_ms / 1000 + 0.1)
    assert other.counts.reclaimed == 0
    assert [r.texts for r in cluster.replies()] == [["<long one>"]]


async def test_stop_finishes_what_is_held_then_exits_0_without_reading_more(cluster: Cluster) -> None:
    worker = await cluster.worker("w1", Engine(cluster.clock, delay_s=1.0))
    cluster.entry("held", request_id=1)
    await advance(cluster.clock, 0.1)
    worker.stop()
    await advance(cluster.clock, CONFIG.read_block_ms / 1000)  # the read in flight ends; no other starts
    cluster.entry("after stop", request_id=2)
    await advance(cluster.clock, 1.0)
    assert cluster.runs[0].result() == 0
    assert [r.request_id for r in cluster.replies()] == [1]
    assert cluster.queued() == (1, 0)  # the later entry waits, unread, for another worker
    assert cluster.redis.live_keys(KEYS.heartbeat("w1")) == {}


async def test_a_worker_whose_model_does_not_load_never_reports_ready_nor_reads(cluster: Cluster) -> None:
    cluster.entry("nobody takes this")
    worker = await cluster.worker("w1", Engine(cluster.clock, broken=True))
    await advance(cluster.clock, 2.0)
    beat = decode_beat(cluster.redis.live_keys(KEYS.heartbeat("w1"))[KEYS.heartbeat("w1")])
    assert not beat.ready and beat.error is not None and "model files missing" in beat.error
    assert "XREADGROUP" not in cluster.redis.ops and "XAUTOCLAIM" not in cluster.redis.ops
    assert cluster.queued() == (1, 0)
    worker.stop()
    await advance(cluster.clock, 0.1)
    assert cluster.runs[0].result() == 1


async def test_a_worker_rides_out_a_queue_outage_and_serves_again(cluster: Cluster) -> None:
    await cluster.worker("w1", Engine(cluster.clock))
    cluster.redis.down = True
    await advance(cluster.clock, 3.0)
    tries = cluster.redis.ops.count("XREADGROUP")
    assert tries < 10  # backing off, not spinning
    cluster.redis.down = False
    cluster.entry("after the outage")
    await advance(cluster.clock, CONFIG.backoff_max_s + 0.1)
    assert [r.texts for r in cluster.replies()] == [["<after the outage>"]]
