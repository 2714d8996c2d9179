"""SharedBackend over an in-memory ledger that can be made unreachable: the ledger's decisions while it answers,
the local fallback share while it does not, Redis retried at most every `retry_redis_s`, outage spend replayed."""

from __future__ import annotations

import asyncio

import pytest

from peakgate.admission.admission import Admission
from peakgate.admission.backend import Verdict
from peakgate.admission.local import LocalBackend
from peakgate.admission.metrics import AdmissionMetrics
from peakgate.admission.outage import SpendBatch
from peakgate.admission.shared import SharedBackend
from peakgate.clock import FakeClock
from peakgate.config import ClassConfig, KeyConfig, PriorityClass, Settings
from peakgate.errors import QuotaExceeded, RateLimited, Unavailable
from peakgate.observe.metrics import Metrics

ROOMY = ClassConfig(rate_chars_per_s=1_000_000, burst_chars=1_000_000)
KEYS = (KeyConfig(key="k", tenant="acme", rate_chars_per_s=10, burst_chars=100, quota_chars=100),)


class FakeLedger:
    """The shared ledger in memory: a full-share LocalBackend on the test's clock, reachable or not."""

    def __init__(self, settings: Settings, clock: FakeClock) -> None:
        self.shared = LocalBackend.from_settings(settings, clock)
        self.down = False
        self.calls = 0
        self.gate: asyncio.Event | None = None  # set: calls wait for it (a Redis that hangs)
        self.lose_next_reply = False  # the next call is applied, then fails (a reply lost to a timeout)
        self.replayed: set[str] = set()

    async def _reach(self) -> None:
        self.calls += 1
        if self.gate is not None:
            await self.gate.wait()
        if self.down:
            raise Unavailable("redis is down")

    def _answer(self) -> None:
        if self.lose_next_reply:
            self.lose_next_reply = False
            raise Unavailable("redis timed out")

    async def admit(self, key: str | None, characters: int, priority: PriorityClass, *, rates: bool
                    ) -> tuple[Verdict, int]:
        await self._reach()
        verdict = await self.shared.admit(key, characters, priority, rates=rates)
        return verdict, await self.used(key)

    async def record(self, key: str | None, characters: int) -> int:
        await self._reach()
        await self.shared.record(key, characters)
        return await self.used(key)

    async def used(self, key: str | None) -> int:
        return (await self.shared.usage(key))[0]

    async def replay(self, batch: SpendBatch) -> None:
        await self._reach()
        if batch.batch_id not in self.replayed:
            self.replayed.add(batch.batch_id)
            for key, characters in batch.spend.items():
                await self.shared.record(key, characters)
        self._answer()

    async def reset(self, keys: list[str | None]) -> None:
        await self._reach()
        await self.shared.reset_period()

    async def close(self) -> None:
        return None


class Gateway:
    """One gateway's admission over the shared fake ledger."""

    def __init__(self, ledger: FakeLedger, settings: Settings, clock: FakeClock) -> None:
        self.metrics = Metrics()
        self.backend = SharedBackend(ledger, settings, clock, AdmissionMetrics(self.metrics.registry))
        self.admission = Admission(settings, clock, self.metrics, backend=self.backend)
        self.who = self.admission.authenticate("k")

    def sample(self, name: str, labels: dict[str, str] | None = None) -> float:
        return self.metrics.registry.get_sample_value(name, labels or {}) or 0.0

    def fallback_decisions(self, op: str) -> float:
        return self.sample("peakgate_admission_fallback_decisions_total", {"op": op})


def make(share: float = 0.5, retry_s: float = 5.0) -> tuple[FakeLedger, Gateway, Gateway, FakeClock]:
    clock = FakeClock()
    settings = Settings(keys=KEYS, classes={"interactive": ROOMY, "document": ROOMY, "batch": ROOMY},
                        admission={"backend": "redis", "fallback_share": share, "retry_redis_s": retry_s})
    ledger = FakeLedger(settings, clock)
    return ledger, Gateway(ledger, settings, clock), Gateway(ledger, settings, clock), clock


async def test_gateways_over_one_ledger_share_one_bucket_and_one_quota() -> None:
    _, a, b, _ = make()
    await a.admission.admit(a.who, 60)
    with pytest.raises(RateLimited, match="tenant 'acme'") as info:
        await b.admission.admit(b.who, 60)  # alone, b's bucket would still be full
    assert info.value.retry_after_s == pytest.approx(2.0)
    await a.admission.record(a.who, 60)
    assert await b.admission.usage(b.who) == (60, 100)
    with pytest.raises(QuotaExceeded, match="60 of 100 used"):
        await b.admission.check_quota(b.who, 41, "batch")
    assert a.sample("peakgate_admission_fallback") == 0.0


async def test_an_unreachable_ledger_falls_back_to_the_local_share_and_says_so() -> None:
    ledger, a, _, clock = make(share=0.5, retry_s=5.0)
    ledger.down = True
    assert await a.admission.admit(a.who, 50) == 0.0  # the local bucket: half of the burst of 100 ...
    with pytest.raises(RateLimited) as info:
        await a.admission.admit(a.who, 1)
    assert info.value.retry_after_s == pytest.approx(0.2)  # ... refilling at half of 10/s
    assert a.sample("peakgate_admission_fallback") == 1.0
    assert a.fallback_decisions("admit") == 2
    assert ledger.calls == 1  # the second decision did not try Redis again
    clock.advance(5.0)
    ledger.down = False
    await a.admission.admit(a.who, 100)  # the shared bucket (burst 100) decides again
    assert (ledger.calls, a.sample("peakgate_admission_fallback")) == (2, 0.0)
    with pytest.raises(RateLimited):
        await a.admission.admit(a.who, 1)
    assert a.fallback_decisions("admit") == 2


async def test_redis_is_retried_at_most_every_retry_redis_s() -> None:
    ledger, a, _, clock = make(retry_s=5.0)
    ledger.down = True
    for _ in range(3):
        await a.admission.admit(a.who, 1)
        clock.advance(1.0)
    assert ledger.calls == 1
    clock.advance(2.0)  # 5 s after the failure
    await a.admission.admit(a.who, 1)
    await a.admission.admit(a.who, 1)
    assert ledger.calls == 2
    assert a.sample("peakgate_admission_redis_errors_total") == 2


async def test_while_one_call_probes_a_hanging_redis_the_others_decide_locally() -> None:
    ledger, a, _, clock = make(retry_s=5.0)
    ledger.down = True
    await a.admission.admit(a.who, 1)
    clock.advance(5.0)
    ledger.gate = asyncio.Event()
    probe = asyncio.create_task(a.admission.admit(a.who, 1))
    await asyncio.sleep(0)
    assert ledger.calls == 2  # the probe is waiting on Redis
    assert await a.admission.admit(a.who, 1) == 0.0  # not queued behind it
    assert ledger.calls == 2
    ledger.gate.set()
    await probe  # the probe failed too, and fell back
    assert a.fallback_decisions("admit") == 3


async def test_quota_in_an_outage_is_the_last_shared_count_plus_local_spend_replayed_once() -> None:
    ledger, a, b, clock = make(retry_s=5.0)
    await a.admission.record(a.who, 60)  # a has seen 60 billed
    ledger.down = True
    with pytest.raises(QuotaExceeded, match="60 of 100 used"):
        await a.admission.admit(a.who, 41)
    await a.admission.admit(a.who, 30)
    await a.admission.record(a.who, 30)  # billed locally, queued for the ledger
    assert await a.admission.usage(a.who) == (90, 100)
    assert (a.fallback_decisions("admit"), a.fallback_decisions("record"), a.fallback_decisions("usage")) == (2, 1, 1)
    await a.admission.check_quota(a.who, 10, "batch")
    with pytest.raises(QuotaExceeded, match="90 of 100 used"):
        await a.admission.check_quota(a.who, 11, "batch")
    assert a.fallback_decisions("check_quota") == 2
    clock.advance(5.0)
    ledger.down, ledger.lose_next_reply = False, True
    await a.admission.record(a.who, 5)  # the replay reached Redis but its reply was lost: still on the fallback
    assert a.sample("peakgate_admission_fallback") == 1.0
    assert await b.admission.usage(b.who) == (90, 100)  # the lost-reply replay counted once
    clock.advance(5.0)
    assert await a.admission.usage(a.who) == (95, 100)  # the same batch again: counted once, then the 5 sent
    assert await b.admission.usage(b.who) == (95, 100)
    assert a.sample("peakgate_admission_fallback") == 0.0


async def test_a_new_period_needs_the_ledger() -> None:
    ledger, a, b, _ = make()
    await a.admission.record(a.who, 100)
    ledger.down = True
    with pytest.raises(Unavailable):
        await a.admission.reset_period()
    ledger.down = False
    await a.admission.reset_period()
    assert await b.admission.usage(b.who) == (0, 100)
