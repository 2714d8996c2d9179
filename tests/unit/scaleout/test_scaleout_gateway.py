"""The gateway's queue on in-memory streams and a FakeClock: failing fast when Redis or every worker is gone,
the local fallback, deadlines, shedding waiting callers, and the signals it gives the router and the guard."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass

import pytest
from scaleout_fakes import (
    BATCHER,
    CLASSES,
    CONFIG,
    MODEL,
    Engine,
    FakeRedis,
    FakeTransport,
    advance,
    make_gateway,
    make_worker,
    sample,
    settle,
)

from peakgate.backends.base import Health
from peakgate.clock import FakeClock
from peakgate.errors import DeadlineExceeded, Overloaded, UnknownModel
from peakgate.observe.metrics import Metrics
from peakgate.scaleout.gateway import RedisWorkQueue
from peakgate.scaleout.transport import QueueUnreachable
from peakgate.scaleout.worker import Worker
from peakgate.scheduling.scheduler import Scheduler


@dataclass
class Setup:
    clock: FakeClock
    redis: FakeRedis
    engine: Engine
    worker: Worker
    transport: FakeTransport  # the worker's
    gateway: RedisWorkQueue
    gateway_transport: FakeTransport

    def submit(self, *segments: str, priority: str = "interactive", within_s: float = 3.0) -> asyncio.Task[list[str]]:
        return asyncio.create_task(self.gateway.submit(MODEL, list(segments), "en", "es", priority,  # type: ignore[arg-type]
                                                       self.clock.now() + within_s))


@pytest.fixture
async def setup() -> AsyncIterator[Setup]:
    clock = FakeClock(start=100.0)
    redis = FakeRedis(clock)
    engine = Engine(clock)
    worker, transport = make_worker(redis, "w1", engine)
    run = asyncio.create_task(worker.run())
    await settle()
    gateway, gateway_transport, _ = make_gateway(redis, "g1")
    await gateway.start()
    yield Setup(clock, redis, engine, worker, transport, gateway, gateway_transport)
    await gateway.close()
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)


async def test_redis_down_fails_fast_with_retry_after_then_skips_redis_while_backing_off(setup: Setup) -> None:
    setup.redis.down = True
    call = setup.submit("Hello")
    await settle()
    with pytest.raises(QueueUnreachable) as refused:
        call.result()
    assert refused.value.retry_after_s is not None and refused.value.retry_after_s > 0
    assert setup.gateway.health(MODEL) is Health.DOWN
    tries = len(setup.redis.ops)
    again = setup.submit("Hello")
    await settle()
    assert isinstance(again.exception(), QueueUnreachable)
    assert setup.redis.ops[tries:].count("XADD") == 0  # refused from the backoff, without a round trip


async def test_losing_redis_fails_every_waiting_caller_at_once(setup: Setup) -> None:
    setup.engine.gate = asyncio.Event()  # the worker holds the request
    call = setup.submit("Hello", within_s=30.0)
    await advance(setup.clock, 0.05)
    setup.redis.down = True
    await advance(setup.clock, CONFIG.read_block_ms / 1000 + 0.02)  # the reader's next call fails
    assert isinstance(call.exception(), QueueUnreachable)


async def test_the_gateway_recovers_once_redis_is_back(setup: Setup) -> None:
    setup.redis.down = True
    await advance(setup.clock, 0.2)
    setup.redis.down = False
    await advance(setup.clock, CONFIG.backoff_max_s)
    call = setup.submit("Back")
    await advance(setup.clock, 0.05)
    assert call.result() == ["<Back>"]


async def test_no_ready_worker_for_the_model_is_refused_at_once(setup: Setup) -> None:
    assert setup.gateway.health(MODEL) is Health.OK
    setup.worker.stop()
    await advance(setup.clock, 2 * CONFIG.heartbeat_s)  # the gateway's next poll sees it draining, then gone
    call = setup.submit("Hello")
    await settle()
    with pytest.raises(QueueUnreachable, match="no ready worker") as refused:
        call.result()
    assert refused.value.retry_after_s == CONFIG.heartbeat_s
    assert setup.gateway.health(MODEL) is Health.DOWN


async def test_unknown_model_and_past_deadline_are_refused_before_anything_is_queued(setup: Setup) -> None:
    with pytest.raises(UnknownModel):
        await setup.gateway.submit("nope", ["x"], "en", "es", "interactive", setup.clock.now() + 1)
    with pytest.raises(DeadlineExceeded):
        await setup.gateway.submit(MODEL, ["x"], "en", "es", "interactive", setup.clock.now())
    assert "XADD" not in setup.redis.ops


async def test_a_caller_gets_deadline_exceeded_when_no_worker_answers_in_time(setup: Setup) -> None:
    setup.engine.gate = asyncio.Event()
    call = setup.submit("Hello", within_s=1.0)
    await advance(setup.clock, 0.99)
    assert not call.done()
    await advance(setup.clock, 0.02)
    with pytest.raises(DeadlineExceeded, match="before a worker answered"):
        call.result()


async def test_a_worker_error_reaches_the_caller_as_the_same_error() -> None:
    clock = FakeClock(start=100.0)
    redis = FakeRedis(clock)
    engine = Engine(clock)
    worker, _ = make_worker(redis, "w1", engine)
    run = asyncio.create_task(worker.run())
    await settle()
    gateway, _, _ = make_gateway(redis, "g1")
    await gateway.start()
    too_many = [f"s{n}" for n in range(BATCHER.max_queue_len + 1)]  # more than the worker's queue holds
    call = asyncio.create_task(gateway.submit(MODEL, too_many, "en", "es", "interactive", clock.now() + 3))
    await advance(clock, 0.05)
    assert call.exception() is not None and call.exception().__class__.__name__ == "InputTooLarge"
    await gateway.close()
    run.cancel()
    await asyncio.gather(run, return_exceptions=True)


async def test_local_fallback_runs_the_request_here_when_the_queue_is_out_of_reach() -> None:
    clock = FakeClock(start=100.0)
    redis = FakeRedis(clock)
    local_engine = Engine(clock)
    await local_engine.start()
    local = Scheduler({MODEL: local_engine}, BATCHER, CLASSES, clock, Metrics(), 1)
    gateway, _, registry = make_gateway(redis, "g1", fallback=local)
    await gateway.start()  # no worker at all
    call = asyncio.create_task(gateway.submit(MODEL, ["Here"], "en", "es", "interactive", clock.now() + 3))
    await advance(clock, 0.05)
    assert call.result() == ["<Here>"] and local_engine.batches == [("Here",)]
    assert sample(registry, "peakgate_queue_local_fallbacks_total", model=MODEL) == 1
    assert gateway.capacity_per_s(MODEL) == local.capacity_per_s(MODEL)
    await gateway.close()


async def test_shedding_a_starved_class_fails_its_waiting_callers_and_every_less_urgent_one(setup: Setup) -> None:
    setup.engine.gate = asyncio.Event()
    calls = {p: setup.submit("x", "y", priority=p, within_s=60.0) for p in ("interactive", "document", "batch")}
    await advance(setup.clock, 0.05)
    shed = setup.gateway.shed_queued("document", lambda _w: Overloaded("shed"), None)
    await settle()
    assert shed == 4
    assert not calls["interactive"].done()
    assert all(isinstance(calls[p].exception(), Overloaded) for p in ("document", "batch"))


async def test_shedding_at_a_drain_rate_fails_only_the_callers_it_would_make_late(setup: Setup) -> None:
    setup.engine.gate = asyncio.Event()
    soon = setup.submit("a", "b", priority="document", within_s=1.0)
    later = setup.submit("c", priority="document", within_s=10.0)
    await advance(setup.clock, 0.05)
    assert setup.gateway.shed_queued("document", lambda _w: Overloaded("late"), drain_per_s=1.0) == 2
    await settle()
    assert isinstance(soon.exception(), Overloaded) and not later.done()


async def test_router_and_guard_signals_come_from_waiting_callers_and_worker_heartbeats(setup: Setup) -> None:
    assert setup.gateway.oldest_wait_s(MODEL) == 0.0 and not setup.gateway.urgent_backlog(2.0)
    assert setup.gateway.ready_workers(MODEL) == 1
    load = setup.worker.heartbeat().models[MODEL]
    assert setup.gateway.capacity_per_s(MODEL) == load.capacity_per_s
    assert setup.gateway.service_time_s(MODEL, 3) == pytest.approx(3 * load.s_per_item)
    setup.engine.gate = asyncio.Event()
    setup.submit("x", within_s=60.0)
    await advance(setup.clock, 0.5)
    assert setup.gateway.oldest_wait_s(MODEL) == pytest.approx(0.5, abs=0.02)
    assert setup.gateway.urgent_backlog(2.0) and not setup.gateway.urgent_backlog(0.1)
    setup.engine.gate.set()
    await advance(setup.clock, 0.05)
    assert setup.gateway.oldest_wait_s(MODEL) == 0.0 and not setup.gateway.urgent_backlog(2.0)


async def test_close_fails_waiting_callers_and_removes_the_reply_stream(setup: Setup) -> None:
    setup.engine.gate = asyncio.Event()
    call = setup.submit("x", within_s=60.0)
    await advance(setup.clock, 0.05)
    await setup.gateway.close()
    await settle()
    assert call.exception() is not None and "shut down" in str(call.exception())
    assert "pg:r:g1" not in setup.redis.streams
    with pytest.raises(Exception, match="not running"):
        await setup.gateway.submit(MODEL, ["x"], "en", "es", "interactive", setup.clock.now() + 1)
