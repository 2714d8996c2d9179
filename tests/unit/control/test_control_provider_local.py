"""The local provider on fake processes, fake heartbeats and a FakeClock: starting, readiness, draining scale-in,
the warm pool's processes, and failed starts reported and retried with backoff, never raised."""

from __future__ import annotations

import asyncio

import pytest
from autoscale_fakes import FakeBeats, FakeSpawner, beat

from peakgate.clock import FakeClock
from peakgate.control.loop_settings import LocalProviderConfig
from peakgate.control.providers.local import LocalProvider

CONFIG = LocalProviderConfig(start_timeout_s=30.0, stop_timeout_s=20.0, backoff_initial_s=1.0, backoff_max_s=8.0)


def _provider() -> tuple[LocalProvider, FakeSpawner, FakeBeats, FakeClock]:
    clock, spawner, beats = FakeClock(), FakeSpawner(), FakeBeats()
    return LocalProvider(spawner, beats, CONFIG, clock), spawner, beats, clock


async def test_workers_start_then_serve_once_their_heartbeat_says_ready() -> None:
    provider, spawner, beats, _ = _provider()
    state = await provider.scale_to(2)
    assert (state.serving, state.starting) == (0, 2)
    assert [e.kind for e in state.events] == ["requested", "requested"]
    assert [p.standby for p in spawner.procs] == [False, False]
    beats.beats = [beat("a", pid=spawner.procs[0].pid), beat("b", pid=spawner.procs[1].pid, ready=False)]
    state = await provider.current()
    assert (state.serving, state.starting) == (1, 1) and [e.kind for e in state.events] == ["serving"]
    assert len(spawner.procs) == 2  # nothing more started: the target holds


async def test_scale_in_drains_unready_workers_first_then_the_newest() -> None:
    provider, spawner, beats, _ = _provider()
    await provider.scale_to(3)
    beats.beats = [beat("a", pid=spawner.procs[0].pid), beat("c", pid=spawner.procs[2].pid)]
    await provider.current()
    for proc in spawner.procs:
        proc.exit_on_term = False  # draining takes a while
    state = await provider.scale_to(1)
    assert [p.terminated for p in spawner.procs] == [False, True, True]  # the unready one, then the newest
    assert (state.serving, state.starting, state.draining) == (1, 0, 2)
    state = await provider.scale_to(0)
    assert [p.terminated for p in spawner.procs] == [True, True, True]
    assert (state.serving, state.draining) == (0, 3)
    assert not any(p.killed for p in spawner.procs)  # SIGTERM only: each worker answers what it holds


async def test_a_drain_past_stop_timeout_is_killed_and_the_exit_reported() -> None:
    provider, spawner, _, clock = _provider()
    spawner.exit_on_term = False
    await provider.scale_to(1)
    await provider.scale_to(0)
    clock.advance(CONFIG.stop_timeout_s + 1)
    await provider.current()
    assert spawner.procs[0].killed
    state = await provider.current()
    assert state.draining == 0 and [e.kind for e in state.events] == ["gone"]


async def test_warm_workers_start_standing_by_and_count_as_warm_only_while_they_do() -> None:
    provider, spawner, beats, _ = _provider()
    await provider.keep_warm(2)
    assert [p.standby for p in spawner.procs] == [True, True]
    beats.beats = [beat("w1", pid=spawner.procs[0].pid, warm=True, standby=True),
                   beat("w2", pid=spawner.procs[1].pid, warm=True)]  # promoted: serving, still the pool's
    state = await provider.current()
    assert (state.warm, state.serving, state.starting) == (1, 0, 0)
    await provider.keep_warm(1)
    assert [p.terminated for p in spawner.procs] == [True, False]  # the one standing by, not the one serving


async def test_a_worker_that_cannot_be_started_is_reported_and_retried_with_backoff(
        caplog: pytest.LogCaptureFixture) -> None:
    provider, spawner, _, clock = _provider()
    spawner.fail = PermissionError("not executable")
    state = await provider.scale_to(2)
    assert [e.kind for e in state.events] == ["failed"] and "not executable" in state.events[0].detail
    assert (await provider.scale_to(2)).events == ()  # backing off: not tried again yet
    clock.advance(1.0)
    assert [e.kind for e in (await provider.scale_to(2)).events] == ["failed"]  # tried, failed: 2 s now
    clock.advance(1.0)
    assert (await provider.scale_to(2)).events == ()
    spawner.fail = None
    clock.advance(1.0)
    state = await provider.scale_to(2)
    assert state.starting == 2
    assert "next start in 2.0s" in caplog.text


async def test_a_worker_exiting_before_it_is_ready_is_a_failed_start_and_backs_off() -> None:
    provider, spawner, beats, clock = _provider()
    await provider.scale_to(1)
    spawner.procs[0].code = 2  # a bad config: the CLI exits 2
    state = await provider.scale_to(1)
    assert [(e.kind, e.detail) for e in state.events] == [("failed", "exited with code 2 before it was ready")]
    assert len(spawner.procs) == 1  # the replacement waits for the backoff
    clock.advance(1.0)
    await provider.scale_to(1)
    assert len(spawner.procs) == 2
    beats.beats = [beat("ok", pid=spawner.procs[1].pid)]
    assert (await provider.scale_to(1)).serving == 1  # ready: the backoff resets


async def test_a_worker_whose_model_fails_to_load_or_never_gets_ready_is_stopped_as_failed() -> None:
    provider, spawner, beats, clock = _provider()
    await provider.scale_to(2)
    beats.beats = [beat("broken", pid=spawner.procs[0].pid, ready=False, error="echo: model files missing")]
    state = await provider.current()
    assert [(e.kind, e.replica) for e in state.events] == [("failed", "worker-1"), ("draining", "worker-1")]
    assert "model files missing" in state.events[0].detail and spawner.procs[0].terminated
    clock.advance(CONFIG.start_timeout_s + 1)
    state = await provider.current()
    assert ("failed", "worker-2") in [(e.kind, e.replica) for e in state.events]
    assert spawner.procs[1].terminated


async def test_heartbeats_out_of_reach_leave_readiness_as_it_was() -> None:
    provider, spawner, beats, _ = _provider()
    await provider.scale_to(1)
    beats.beats = [beat("a", pid=spawner.procs[0].pid)]
    await provider.current()
    beats.down = True
    state = await provider.scale_to(1)
    assert state.serving == 1 and len(spawner.procs) == 1


async def test_close_drains_every_worker_and_kills_what_outlives_the_timeout() -> None:
    provider, spawner, _, clock = _provider()
    await provider.scale_to(1)
    await provider.keep_warm(1)
    spawner.procs[1].exit_on_term = False
    closing = asyncio.ensure_future(provider.close())
    for _ in range(int(CONFIG.stop_timeout_s / 0.1) + 5):
        await asyncio.sleep(0)
        clock.advance(0.1)
    await closing
    assert spawner.procs[0].terminated and not spawner.procs[0].killed
    assert spawner.procs[1].terminated and spawner.procs[1].killed
