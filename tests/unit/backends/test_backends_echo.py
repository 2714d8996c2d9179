"""EchoBackend: the identity engine behind gateway-overhead benchmarks."""

from __future__ import annotations

import pytest

from peakgate.backends.base import DecodeOptions, Health
from peakgate.backends.echo_backend import EchoBackend
from peakgate.errors import ConfigError, Unavailable, UnsupportedPair


async def test_returns_segments_unchanged_in_order() -> None:
    echo = EchoBackend("echo", [("en", "es")])
    await echo.start()
    segments = ["Open the file", "", "  spaced  ", "ü"]
    out = await echo.translate_batch(segments, "en", "es", DecodeOptions(beam_size=4))
    assert out == segments and out is not segments
    await echo.close()


async def test_lifecycle_matches_a_real_engine() -> None:
    echo = EchoBackend("echo", [("en", "es")], max_batch_size=16)
    assert echo.health() is Health.DOWN and not echo.cost_model().warm
    with pytest.raises(Unavailable):
        await echo.translate_batch(["x"], "en", "es", DecodeOptions())
    await echo.start()
    assert echo.health() is Health.OK
    assert echo.cost_model().warm and echo.cost_model().max_batch_size == 16
    await echo.close()
    assert echo.health() is Health.DOWN


async def test_refuses_pairs_it_was_not_given() -> None:
    echo = EchoBackend("echo", [("en", "es"), ("es", "en")])
    await echo.start()
    assert echo.pairs == frozenset({("en", "es"), ("es", "en")})
    assert await echo.translate_batch(["hola"], "es", "en", DecodeOptions()) == ["hola"]
    with pytest.raises(UnsupportedPair):
        await echo.translate_batch(["x"], "en", "fr", DecodeOptions())


def test_needs_a_pair() -> None:
    with pytest.raises(ConfigError):
        EchoBackend("echo", [])


async def test_delay_holds_each_batch_on_the_injected_clock() -> None:
    import asyncio

    from peakgate.clock import FakeClock

    clock = FakeClock()
    echo = EchoBackend("echo", [("en", "es")], delay_ms=200, clock=clock)
    await echo.start()
    call = asyncio.create_task(echo.translate_batch(["a", "b"], "en", "es", DecodeOptions()))
    await asyncio.sleep(0)
    clock.advance(0.199)
    await asyncio.sleep(0)
    assert not call.done()
    clock.advance(0.001)
    assert await call == ["a", "b"]
