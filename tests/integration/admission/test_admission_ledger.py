"""The Redis ledger's Lua script against a real redis-server: the same decisions as the local limiters (one
scenario table for both), atomic refusals, Redis's clock, NOSCRIPT, exactly-once replays, fast failures."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass

import pytest
import redis
from redis_harness import RedisServer

from peakgate.admission.backend import Admitted, OverQuota, OverRate, Verdict
from peakgate.admission.local import LocalBackend
from peakgate.admission.outage import SpendBatch
from peakgate.admission.redis_ledger import RedisLedger
from peakgate.clock import FakeClock
from peakgate.config import ClassConfig, KeyConfig, PriorityClass, Settings
from peakgate.errors import Unavailable

SECRET = "k-secret-api-key"
SETTINGS_BASE: dict[str, object] = {
    "keys": (KeyConfig(key=SECRET, tenant="acme", rate_chars_per_s=10, burst_chars=100, quota_chars=1_000),),
    "classes": {"interactive": ClassConfig(rate_chars_per_s=10, burst_chars=50),
                "document": ClassConfig(rate_chars_per_s=1e6, burst_chars=1e6),
                "batch": ClassConfig(rate_chars_per_s=100, smoothing=True, max_smoothing_delay_s=1.0)},
}


@dataclass(frozen=True)
class Step:
    priority: PriorityClass
    cost: int
    expect: Verdict
    key: str | None = SECRET
    bill: bool = False  # record `cost` once admitted


# Each scenario starts from empty state; the numbers are bucket.py's (tests/unit/admission has the derivations).
SCENARIOS: dict[str, list[Step]] = {
    "class refusal charges the key nothing, the longer wait wins": [
        Step("interactive", 50, Admitted()),  # key 50 left, class 0 left
        Step("interactive", 50, OverRate(5.0, "class_rate")),
        Step("document", 50, Admitted()),  # the refused request did not charge the key
        Step("document", 1, OverRate(0.1, "key_rate")),
    ],
    "above the burst: admitted from a full bucket into debt": [
        Step("document", 50, Admitted()),
        Step("document", 250, OverRate(5.0, "key_rate")),  # waits until full, not for 250 tokens
        Step("document", 1, Admitted(), key=None),  # no key: the class alone
    ],
    "debt is repaid before anyone else passes": [
        Step("document", 250, Admitted()),
        Step("document", 1, OverRate(15.1, "key_rate")),
    ],
    "a shaped class spaces requests out up to its longest wait": [
        Step("batch", 50, Admitted(0.0), key=None),
        Step("batch", 50, Admitted(0.5), key=None),
        Step("batch", 50, Admitted(1.0), key=None),
        Step("batch", 50, OverRate(0.5, "class_rate"), key=None),
    ],
    "the quota is checked first and billed by record": [
        Step("document", 100, Admitted(), bill=True),
        Step("document", 901, OverQuota(100, 1_000)),  # over quota although the bucket would refuse too
        Step("interactive", 40, OverRate(4.0, "key_rate")),  # key 0 left, class 10 short: the key's 4 s wins
    ],
    "a tie in wait names the key's limiter": [
        Step("interactive", 50, Admitted()),
        Step("document", 50, Admitted()),  # key now 0 left, class 'interactive' 0 left: both 10 char/s
        Step("interactive", 10, OverRate(1.0, "key_rate")),
    ],
}


class RedisSide:
    def __init__(self, ledger: RedisLedger) -> None:
        self.ledger = ledger

    async def admit(self, key: str | None, cost: int, priority: PriorityClass) -> Verdict:
        return (await self.ledger.admit(key, cost, priority, rates=True))[0]

    async def record(self, key: str | None, cost: int) -> None:
        await self.ledger.record(key, cost)


@pytest.fixture
def client(redis_server: RedisServer) -> Iterator[redis.Redis]:
    with redis_server.client() as sync:
        yield sync


@pytest.fixture
async def ledger(redis_server: RedisServer) -> AsyncIterator[RedisLedger]:
    settings = Settings(**SETTINGS_BASE, admission={"backend": "redis", "redis_url": redis_server.url})
    ledger = RedisLedger.from_settings(settings)
    yield ledger
    await ledger.close()


def same(got: Verdict, want: Verdict) -> bool:
    """Equal, with Redis's seconds allowed the few milliseconds that pass on its real clock during a test."""
    if isinstance(got, OverRate) and isinstance(want, OverRate):
        return got.reason == want.reason and got.wait_s == pytest.approx(want.wait_s, abs=0.05)
    if isinstance(got, Admitted) and isinstance(want, Admitted):
        return got.turn_s == pytest.approx(want.turn_s, abs=0.05)
    return got == want


@pytest.mark.parametrize("scenario", list(SCENARIOS))
async def test_redis_decides_as_the_local_limiters_do(ledger: RedisLedger, scenario: str) -> None:
    local = LocalBackend.from_settings(Settings(**SETTINGS_BASE), FakeClock())
    for side in (local, RedisSide(ledger)):
        for i, step in enumerate(SCENARIOS[scenario]):
            got = await side.admit(step.key, step.cost, step.priority)
            assert same(got, step.expect), (type(side).__name__, i, got)
            if step.bill:
                await side.record(step.key, step.cost)


async def test_buckets_refill_on_redis_clock_and_expire_once_full(ledger: RedisLedger, client: redis.Redis) -> None:
    await ledger.admit(SECRET, 100, "document", rates=True)
    state_key, = client.keys("pg:adm:key:*")
    assert 10_000 < client.pttl(state_key) <= 11_000  # full again in 10 s (100 at 10/s), plus a second
    client.hincrbyfloat(state_key, "stamp", -2.5)  # as if charged 2.5 s earlier on Redis's clock
    verdict, _ = await ledger.admit(SECRET, 30, "document", rates=True)
    assert same(verdict, OverRate(0.5, "key_rate"))  # 25 refilled, 5 short at 10/s


async def test_a_refusal_writes_nothing_and_the_api_key_never_reaches_redis(ledger: RedisLedger,
                                                                            client: redis.Redis) -> None:
    await ledger.admit(SECRET, 50, "interactive", rates=True)
    before = {k: client.hgetall(k) for k in client.keys("pg:adm:*")}
    verdict, used = await ledger.admit(SECRET, 50, "interactive", rates=True)
    assert isinstance(verdict, OverRate) and used == 0
    assert {k: client.hgetall(k) for k in client.keys("pg:adm:*")} == before
    assert not [k for k in client.keys("*") if SECRET.encode() in k]


async def test_check_quota_alone_charges_no_bucket(ledger: RedisLedger, client: redis.Redis) -> None:
    assert await ledger.record(SECRET, 990) == 990
    assert await ledger.admit(SECRET, 11, "batch", rates=False) == (OverQuota(990, 1_000), 990)
    assert await ledger.admit(SECRET, 10, "batch", rates=False) == (Admitted(), 990)
    assert client.keys("pg:adm:key:*") == []
    assert await ledger.used(SECRET) == 990
    await ledger.reset([SECRET, None])
    assert await ledger.used(SECRET) == 0


async def test_a_flushed_script_is_loaded_again(ledger: RedisLedger, client: redis.Redis) -> None:
    await ledger.admit(SECRET, 1, "document", rates=True)
    client.script_flush()  # what a restarted or failed-over Redis looks like
    verdict, _ = await ledger.admit(SECRET, 1, "document", rates=True)
    assert verdict == Admitted()


async def test_a_replayed_batch_is_added_once(ledger: RedisLedger) -> None:
    batch = SpendBatch("b1", {SECRET: 30, None: 4})
    await ledger.replay(batch)
    await ledger.replay(batch)  # its first reply was lost: sent again
    assert (await ledger.used(SECRET), await ledger.used(None)) == (30, 4)
    await ledger.replay(SpendBatch("b2", {SECRET: 5}))
    assert await ledger.used(SECRET) == 35


async def test_an_unreachable_redis_fails_fast_as_unavailable(ledger: RedisLedger, redis_server: RedisServer) -> None:
    await ledger.used(SECRET)  # a pooled connection, then Redis goes away under it
    redis_server.stop()
    for call in (lambda: ledger.admit(SECRET, 1, "document", rates=True), lambda: ledger.record(SECRET, 1)):
        started = time.monotonic()
        with pytest.raises(Unavailable, match="shared admission: redis") as info:
            await call()
        assert time.monotonic() - started < 1.0
        assert info.value.__cause__ is not None
