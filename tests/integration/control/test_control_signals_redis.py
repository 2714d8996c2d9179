"""The autoscaler's Redis view on a real redis-server: entries waiting (stream length less pending), heartbeats,
and the serve flags a standby worker polls."""

from __future__ import annotations

from redis_harness import RedisServer

from peakgate.control.signals_redis import RedisControl
from peakgate.scaleout.cluster import Counts, Heartbeat, encode_beat
from peakgate.scaleout.keys import Keys
from peakgate.scaleout.redis_streams import RedisStreams
from peakgate.scaleout.settings import QueueConfig

KEYS = Keys("pg")


async def test_waiting_entries_are_the_stream_less_what_workers_hold(redis_server: RedisServer) -> None:
    config = QueueConfig(backend="redis", redis_url=redis_server.url)
    client = redis_server.client()
    stream, fresh = KEYS.work("m", "interactive"), KEYS.work("m", "batch")
    client.xgroup_create(stream, config.group, id="0", mkstream=True)
    for n in range(5):
        client.xadd(stream, {b"m": f"entry {n}".encode()})
    client.xreadgroup(config.group, "worker-1", {stream: ">"}, count=2)  # held: pending, not waiting
    client.xadd(fresh, {b"m": b"no group yet"})  # a stream no worker joined: all of it waits
    control = RedisControl.connect(config)
    try:
        waiting = await control.waiting([stream, fresh, KEYS.work("m", "document")])
        assert waiting == {stream: 3, fresh: 1, KEYS.work("m", "document"): 0}
    finally:
        await control.close()


async def test_heartbeats_are_read_and_serve_flags_set_and_cleared_where_workers_look(
        redis_server: RedisServer) -> None:
    config = QueueConfig(backend="redis", redis_url=redis_server.url)
    client = redis_server.client()
    beat = Heartbeat(worker="w1", pid=7, ready=True, models={}, held=0, hold_limit=8, counts=Counts(),
                     at_wall_s=1.0, warm=True, standby=True)
    client.set(KEYS.heartbeat("w1"), encode_beat(beat), px=5_000)
    client.set(KEYS.heartbeat("garbled"), b"\xc1", px=5_000)  # logged and left out
    control = RedisControl.connect(config)
    worker_side = RedisStreams.connect(config, "w1")
    try:
        assert await control.heartbeats() == [beat]
        await control.set_serving("w1", True)
        assert await worker_side.flag(KEYS.serve_flag("w1"))
        await control.set_serving("w1", False)
        assert not await worker_side.flag(KEYS.serve_flag("w1"))
    finally:
        await control.close()
        await worker_side.close()
