"""TranslationCache: L1 then L2 with backfill, L2 failures served as misses, and single-flight fills."""

from __future__ import annotations

import asyncio

import pytest
from cache_fakes import CONFIG, PARTS, FakeL2, Harness, keys
from prometheus_client import CollectorRegistry

from peakgate.cache.keys import cache_key
from peakgate.cache.layered import build_cache
from peakgate.cache.metrics import CacheMetrics
from peakgate.cache.redis_l2 import RedisCache
from peakgate.cache.settings import CacheConfig
from peakgate.clock import FakeClock
from peakgate.errors import ConfigError, EngineCrashed

SPANISH = {"hello": "hola", "world": "mundo", "cat": "gato", "dog": "perro"}


class Engine:
    """A fill callback over fixed texts; `gate` holds it until released, `error` makes it raise."""

    def __init__(self, texts: list[str], *, gate: asyncio.Event | None = None) -> None:
        self.texts = texts
        self.calls: list[list[int]] = []
        self.gate = gate
        self.error: Exception | None = None
        self.started = asyncio.Event()

    async def __call__(self, indices: list[int]) -> list[str]:
        self.calls.append(indices)
        self.started.set()
        if self.gate is not None:
            await self.gate.wait()
        if self.error is not None:
            raise self.error
        return [translate(self.texts[i]) for i in indices]


def translate(text: str) -> str:
    words = text.rstrip(".…").split()
    out = " ".join(SPANISH.get(w.lower(), w) for w in words)
    if text[:1].isupper():
        out = out[:1].upper() + out[1:]
    if text.isupper() and len(text) > 1:
        out = out.upper()
    return out + text[len(text.rstrip(".…")) :]


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


async def test_get_many_reads_l1_then_l2_and_backfills_l1() -> None:
    h = Harness(l2=FakeL2())
    assert h.l2 is not None
    h.l1.set_many({"a": "1"})
    h.l2.data.update({"b": "2"})
    assert await h.cache.get_many(["a", "b", "c"]) == ["1", "2", None]
    assert h.l2.gets == [["b", "c"]]
    assert h.l1.get_many(["b"]) == ["2"]


async def test_set_many_writes_both_layers() -> None:
    h = Harness(l2=FakeL2())
    assert h.l2 is not None
    await h.cache.set_many({"k": "v"})
    assert h.l1.get_many(["k"]) == ["v"]
    assert h.l2.data == {"k": "v"}


async def test_store_and_lookup_reshape_for_each_requester() -> None:
    h = Harness()
    await h.cache.store(keys("Hello world."), ["Hola mundo."])
    assert await h.cache.lookup(keys("HELLO WORLD", "hello world…", "cat")) == ["HOLA MUNDO", "hola mundo…", None]


async def test_store_skips_translations_that_cannot_be_shared() -> None:
    h = Harness()
    await h.cache.store(keys("Hello."), ["こんにちは。"])
    assert len(h.l1) == 0


async def test_get_or_fill_fills_misses_in_one_call_and_stores_them() -> None:
    h = Harness(l2=FakeL2())
    assert h.l2 is not None
    texts = ["hello", "world", "Cat."]
    h.l1.set_many({keys("world")[0].key: "mundo"})
    engine = Engine(texts)
    assert await h.cache.get_or_fill(keys(*texts), engine) == ["hola", "mundo", "Gato."]
    assert engine.calls == [[0, 2]]
    assert set(h.l2.data.values()) == {"hola", "gato"}
    again = Engine(["CAT", "Hello."])
    assert await h.cache.get_or_fill(keys("CAT", "Hello."), again) == ["GATO", "Hola."]
    assert again.calls == []


async def test_duplicates_in_one_request_fill_once_per_shape() -> None:
    h = Harness()
    texts = ["hello", "hello", "Hello.", "dog"]
    engine = Engine(texts)
    assert await h.cache.get_or_fill(keys(*texts), engine) == ["hola", "hola", "Hola.", "perro"]
    assert engine.calls == [[0, 2, 3]]  # "Hello." is the same key but a different source: its own output


async def test_l2_hits_skip_the_fill() -> None:
    h = Harness(l2=FakeL2())
    assert h.l2 is not None
    h.l2.data[keys("dog")[0].key] = "perro"
    engine = Engine(["Dog", "cat"])
    assert await h.cache.get_or_fill(keys("Dog", "cat"), engine) == ["Perro", "gato"]
    assert engine.calls == [[1]]


async def test_failing_l2_is_counted_and_served_as_a_miss() -> None:
    h = Harness(l2=FakeL2())
    assert h.l2 is not None
    h.l2.fail = True
    engine = Engine(["hello"])
    assert await h.cache.get_or_fill(keys("hello"), engine) == ["hola"]
    assert await h.cache.get_many(["nope"]) == [None]
    await h.cache.set_many({"k": "v"})
    assert h.sample("peakgate_cache_errors_total", {"layer": "redis", "kind": "Unavailable"}) == 4
    assert h.l1.get_many([keys("hello")[0].key]) == ["hola"]  # L1 still filled


async def test_wrong_fill_length_is_an_error_and_stores_nothing() -> None:
    h = Harness()

    async def short(indices: list[int]) -> list[str]:
        return []

    with pytest.raises(ValueError, match="0 translations for 1"):
        await h.cache.get_or_fill(keys("hello"), short)
    assert len(h.l1) == 0
    assert h.cache.inflight == 0


async def test_concurrent_requests_fill_a_key_once() -> None:
    h = Harness(l2=FakeL2())
    gate = asyncio.Event()
    first = Engine(["hello", "cat"], gate=gate)
    second = Engine(["HELLO.", "dog"])
    owner = asyncio.create_task(h.cache.get_or_fill(keys("hello", "cat"), first))
    await first.started.wait()
    waiter = asyncio.create_task(h.cache.get_or_fill(keys("HELLO.", "dog"), second))
    await settle()
    assert second.calls == [[1]]  # only "dog" is its own; "hello" waits on the owner
    assert not waiter.done()
    gate.set()
    assert await owner == ["hola", "gato"]
    assert await waiter == ["HOLA.", "perro"]
    assert first.calls == [[0, 1]]
    assert h.sample("peakgate_cache_single_flight_total") == 1
    assert h.cache.inflight == 0


async def test_waiters_also_wait_out_the_owners_l2_lookup() -> None:
    l2 = FakeL2()
    h = Harness(l2=l2)
    l2.data[keys("hello")[0].key] = "hola"
    l2.gate = asyncio.Event()
    a, b = Engine(["hello"]), Engine(["Hello"])
    owner = asyncio.create_task(h.cache.get_or_fill(keys("hello"), a))
    await settle()
    waiter = asyncio.create_task(h.cache.get_or_fill(keys("Hello"), b))
    await settle()
    l2.gate.set()
    assert (await owner, await waiter) == (["hola"], ["Hola"])
    assert len(l2.gets) == 1
    assert a.calls == b.calls == []


async def test_fill_error_reaches_every_waiter_and_nothing_is_stored() -> None:
    h = Harness(l2=FakeL2())
    assert h.l2 is not None
    gate = asyncio.Event()
    engine = Engine(["hello"], gate=gate)
    engine.error = EngineCrashed("boom")
    owner = asyncio.create_task(h.cache.get_or_fill(keys("hello"), engine))
    await engine.started.wait()
    waiters = [asyncio.create_task(h.cache.get_or_fill(keys("Hello"), Engine(["Hello"]))) for _ in range(3)]
    await settle()
    gate.set()
    results = await asyncio.gather(owner, *waiters, return_exceptions=True)
    assert all(r is engine.error for r in results)
    assert len(h.l1) == 0
    assert h.l2.data == {}
    assert h.cache.inflight == 0
    assert await h.cache.get_or_fill(keys("hello"), Engine(["hello"])) == ["hola"]


async def test_cancelled_owner_hands_the_key_to_a_waiter() -> None:
    h = Harness()
    owner_engine = Engine(["hello"], gate=asyncio.Event())  # never released
    owner = asyncio.create_task(h.cache.get_or_fill(keys("hello"), owner_engine))
    await owner_engine.started.wait()
    waiter_engine = Engine(["Hello."])
    waiter = asyncio.create_task(h.cache.get_or_fill(keys("Hello."), waiter_engine))
    await settle()
    assert waiter_engine.calls == []
    owner.cancel()
    assert await asyncio.wait_for(waiter, timeout=5) == ["Hola."]
    assert owner.cancelled()
    assert waiter_engine.calls == [[0]]
    assert h.cache.inflight == 0


async def test_cancelled_waiter_does_not_disturb_the_owner() -> None:
    h = Harness()
    gate = asyncio.Event()
    engine = Engine(["hello"], gate=gate)
    owner = asyncio.create_task(h.cache.get_or_fill(keys("hello"), engine))
    await engine.started.wait()
    waiter = asyncio.create_task(h.cache.get_or_fill(keys("hello"), Engine(["hello"])))
    await settle()
    waiter.cancel()
    await settle()
    gate.set()
    assert await owner == ["hola"]
    assert waiter.cancelled()


async def test_waiter_translates_itself_when_the_owners_output_cannot_be_shared() -> None:
    h = Harness()
    gate = asyncio.Event()

    async def japanese(indices: list[int]) -> list[str]:
        await gate.wait()
        return ["こんにちは。"]

    owner = asyncio.create_task(h.cache.get_or_fill(keys("Hello."), japanese))
    await settle()
    mine = Engine(["hello"])
    waiter = asyncio.create_task(h.cache.get_or_fill(keys("hello"), mine))
    await settle()
    gate.set()
    assert await owner == ["こんにちは。"]
    assert await waiter == ["hola"]
    assert mine.calls == [[0]]


async def test_empty_request() -> None:
    h = Harness()
    assert await h.cache.get_or_fill([], Engine([])) == []


async def test_build_cache_by_backend() -> None:
    metrics = CacheMetrics(CollectorRegistry())
    clock = FakeClock()
    memory = build_cache(CacheConfig(backend="memory", l1_ttl_s=5), clock, metrics)
    assert memory.l2 is None
    await memory.close()
    shared = build_cache(CacheConfig(backend="redis"), clock, metrics)
    assert isinstance(shared.l2, RedisCache)
    await shared.close()  # never connected: closing must still be clean


def test_unknown_backend_is_a_config_error() -> None:
    config = CacheConfig.model_construct(**{**CacheConfig().model_dump(), "backend": "memcached"})
    with pytest.raises(ConfigError):
        build_cache(config, FakeClock(), CacheMetrics(CollectorRegistry()))


def test_keys_helper_matches_cache_key() -> None:
    assert keys("hello")[0] == cache_key("hello", PARTS, CONFIG)


async def test_waiter_with_the_owners_shape_takes_an_unshareable_output_as_is() -> None:
    h = Harness()
    gate = asyncio.Event()

    async def odd(indices: list[int]) -> list[str]:
        await gate.wait()
        return ["Hola!"]  # a final mark other than the source's: cannot be stored

    owner = asyncio.create_task(h.cache.get_or_fill(keys("Hello."), odd))
    await settle()
    mine = Engine(["Hello."])
    waiter = asyncio.create_task(h.cache.get_or_fill(keys("Hello."), mine))
    await settle()
    gate.set()
    assert (await owner, await waiter) == (["Hola!"], ["Hola!"])
    assert mine.calls == []
    assert len(h.l1) == 0
