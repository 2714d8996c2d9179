"""A standby (warm) worker on in-memory streams and a FakeClock: it loads and beats ready but reads nothing until
its serve flag is set, serves at once when it is, and stands by again (finishing what it holds) once cleared;
gateways never count it. Plus the heartbeat's CPU meter."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from scaleout_fakes import BATCHER, CLASSES, CONFIG, MODEL, Engine, FakeRedis, FakeTransport, Wall, advance, settle

from peakgate.clock import FakeClock
from peakgate.scaleout import codec
from peakgate.scaleout.cluster import ClusterView, CpuMeter, Heartbeat, decode_beat, encode_beat
from peakgate.scaleout.keys import Keys
from peakgate.scaleout.worker import Worker

KEYS = Keys(CONFIG.stream_prefix)


class FlagTransport(FakeTransport):
    async def flag(self, key: str) -> bool:
        await self._op("EXISTS")
        return key in self.redis.live_keys(key)


@dataclass
class Warm:
    clock: FakeClock
    redis: FakeRedis
    worker: Worker
    engine: Engine

    def beat(self) -> Heartbeat:
        return decode_beat(self.redis.live_keys(KEYS.heartbeat("w1"))[KEYS.heartbeat("w1")])

    def promote(self, on: bool = True) -> None:
        if on:
            self.redis.keys[KEYS.serve_flag("w1")] = (b"1", math.inf)
        else:
            self.redis.keys.pop(KEYS.serve_flag("w1"))

    def entry(self, text: str, request_id: int) -> None:
        entry = codec.WorkEntry(request_id=request_id, gateway="gw", reply_to=KEYS.reply("gw"), model=MODEL,
                                source="en", target="es", priority="interactive", segments=[text],
                                deadline_wall_s=Wall(self.clock).now() + 30)
        self.redis.add(KEYS.work(MODEL, "interactive"), codec.encode(entry))


@pytest.fixture
async def warm() -> AsyncIterator[Warm]:
    clock = FakeClock(start=100.0)
    redis = FakeRedis(clock)
    engine = Engine(clock, delay_s=0.2)
    worker = Worker(config=CONFIG, batcher=BATCHER, classes=CLASSES, backends={MODEL: engine},
                    concurrency={MODEL: 1}, transport=FlagTransport(redis, "w1"), clock=clock, wall=Wall(clock),
                    worker_id="w1", grace_s=5.0, standby=True)
    run = asyncio.create_task(worker.run())
    await settle()
    yield Warm(clock, redis, worker, engine)
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)


async def test_a_standby_worker_is_ready_but_reads_nothing_and_gateways_do_not_count_it(warm: Warm) -> None:
    warm.entry("waiting", 1)
    await advance(warm.clock, 1.0)
    beat = warm.beat()
    assert beat.ready and beat.standby and beat.warm and beat.first_served_wall_s is None
    assert warm.engine.started and warm.engine.batches == []  # models loaded, nothing read
    assert warm.redis.pending(KEYS.work(MODEL, "interactive")) == 0
    view = ClusterView()
    view.update([encode_beat(beat)])
    assert view.ready_workers(MODEL) == 0


async def test_promotion_serves_within_one_poll_and_stamps_the_first_request_served(warm: Warm) -> None:
    warm.entry("waiting", 1)
    await advance(warm.clock, 1.0)
    promoted_at = Wall(warm.clock).now()
    warm.promote()
    await advance(warm.clock, CONFIG.read_block_ms / 1000 + 0.25)  # one poll, then one 0.2 s batch
    assert warm.engine.batches == [("waiting",)]
    await advance(warm.clock, CONFIG.heartbeat_s)  # its next heartbeat
    beat = warm.beat()
    assert not beat.standby and beat.warm
    assert beat.first_served_wall_s is not None
    assert 0.2 <= beat.first_served_wall_s - promoted_at <= CONFIG.read_block_ms / 1000 + 0.25
    view = ClusterView()
    view.update([encode_beat(beat)])
    assert view.ready_workers(MODEL) == 1


async def test_a_cleared_flag_makes_it_finish_what_it_holds_and_stand_by_again(warm: Warm) -> None:
    warm.promote()
    await advance(warm.clock, 0.2)
    warm.engine.gate = asyncio.Event()  # its next batch runs until released
    warm.entry("held", 1)
    await advance(warm.clock, 0.1)
    assert warm.engine.batches == [("held",)]
    warm.promote(False)
    await advance(warm.clock, CONFIG.heartbeat_s + 0.05)  # noticed at the next heartbeat
    warm.entry("later", 2)
    warm.engine.gate.set()
    await advance(warm.clock, 1.0)
    assert warm.engine.batches == [("held",)]  # the held one finished, the later one left for others
    assert warm.redis.pending(KEYS.work(MODEL, "interactive")) == 0
    assert len(warm.redis.stream(KEYS.work(MODEL, "interactive")).entries) == 1
    assert warm.beat().standby
    warm.promote()  # and it can be promoted again; the first request served counts from then
    again_at = Wall(warm.clock).now()
    await advance(warm.clock, 1.0)
    assert warm.engine.batches[-1] == ("later",)
    served = warm.beat().first_served_wall_s
    assert served is not None and served >= again_at


async def test_stopping_a_warm_worker_removes_its_serve_flag(warm: Warm) -> None:
    warm.promote()
    await advance(warm.clock, 0.5)
    warm.worker.stop()
    await advance(warm.clock, 0.5)
    assert KEYS.serve_flag("w1") not in warm.redis.keys
    assert KEYS.heartbeat("w1") not in warm.redis.keys


def test_the_cpu_meter_reads_cpu_seconds_per_clock_second_between_readings() -> None:
    clock = FakeClock()
    cpu = [10.0]
    meter = CpuMeter(clock, lambda: cpu[0])
    clock.advance(2.0)
    cpu[0] = 11.0
    assert meter.read() == pytest.approx(0.5)
    assert meter.read() == 0.0  # no time passed: nothing to divide by
    clock.advance(1.0)
    cpu[0] = 12.5
    assert meter.read() == pytest.approx(1.5)  # two threads busy: more than one core
