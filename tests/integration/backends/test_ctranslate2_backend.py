"""CTranslate2Backend against the REAL shipped students in models/ (int8 and float32)."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from collections.abc import AsyncIterator
from pathlib import Path

import ctranslate2
import pytest

from peakgate.backends.base import DecodeOptions, Health
from peakgate.backends.ctranslate2_backend import CTranslate2Backend
from peakgate.backends.niceness import NICE_SUPPORTED
from peakgate.config import REPO_MODELS_DIR
from peakgate.errors import BackendError, ConfigError, EngineCrashed, Unavailable, UnsupportedPair

GREEDY = DecodeOptions(beam_size=1, max_decoding_length=256)
STUDENTS = {"int8": "student-en-es-int8", "float32": "student-en-es-fp32"}

pytestmark = pytest.mark.skipif(
    not all((REPO_MODELS_DIR / d / "model.bin").is_file() for d in STUDENTS.values()),
    reason="the student models are not built (peakgate models build)",
)


def _backend(compute_type: str, path: Path | None = None) -> CTranslate2Backend:
    return CTranslate2Backend(
        f"test-{compute_type}", path or REPO_MODELS_DIR / STUDENTS[compute_type], "en", "es",
        compute_type=compute_type, intra_threads=2,
    )


@pytest.fixture(params=sorted(STUDENTS))
async def backend(request: pytest.FixtureRequest) -> AsyncIterator[CTranslate2Backend]:
    b = _backend(request.param)
    await b.start()
    yield b
    await b.close()


async def test_translates_to_non_empty_spanish(backend: CTranslate2Backend) -> None:
    assert backend.health() is Health.OK and backend.cost_model().warm
    [out] = await backend.translate_batch(["Open the file"], "en", "es", GREEDY)
    assert out.strip() and out != "Open the file"
    assert any(word in out.lower() for word in ("abrir", "abre", "archivo", "fichero")), out


async def test_batch_keeps_order_and_matches_single_translations(backend: CTranslate2Backend) -> None:
    segments = ["Open the file", "Save changes before closing?", "Network is unreachable", "Delete"]
    batch = await backend.translate_batch(segments, "en", "es", GREEDY)
    singles = [(await backend.translate_batch([s], "en", "es", GREEDY))[0] for s in segments]
    assert batch == singles
    assert len(set(batch)) == len(segments)


async def test_empty_segments_pass_through(backend: CTranslate2Backend) -> None:
    out = await backend.translate_batch(["", "Open the file", "   "], "en", "es", GREEDY)
    assert out[0] == "" and out[2] == ""
    assert out[1]
    assert await backend.translate_batch([], "en", "es", GREEDY) == []


async def test_decode_options_take_effect(backend: CTranslate2Backend) -> None:
    text = ["Authentication is required to cancel a task that was not started by yourself"]
    full = (await backend.translate_batch(text, "en", "es", GREEDY))[0]
    short = (await backend.translate_batch(text, "en", "es", DecodeOptions(max_decoding_length=2)))[0]
    assert 0 < len(short.split()) <= 2 < len(full.split())
    beam = (await backend.translate_batch(text, "en", "es", DecodeOptions(beam_size=4)))[0]
    assert beam  # beam 4 decodes (it may or may not differ from greedy on this sentence)


async def test_invalid_decode_options_are_a_backend_error(backend: CTranslate2Backend) -> None:
    with pytest.raises(BackendError, match="decoding options"):
        await backend.translate_batch(["Open the file"], "en", "es", DecodeOptions(beam_size=0))


async def test_crashed_engine_is_reloaded_and_the_batch_retried_once() -> None:
    b = _backend("int8")
    await b.start()
    try:
        assert b._loaded is not None
        expected = await b.translate_batch(["Open the file"], "en", "es", GREEDY)
        b._loaded.lanes[0].translator.unload_model()  # a real ctranslate2 RuntimeError on the next batch
        assert await b.translate_batch(["Open the file"], "en", "es", GREEDY) == expected
        assert b.restarts == 1
        assert b.health() is Health.OK
    finally:
        await b.close()


class _BrokenTranslator:
    """Fails every batch the way ctranslate2 does (RuntimeError), even after a reload."""

    model_is_loaded = True

    def translate_batch(self, *args: object, **kwargs: object) -> list[object]:
        raise RuntimeError("out of memory")

    def unload_model(self) -> None:
        pass

    def load_model(self) -> None:
        pass


async def test_engine_failing_after_reload_is_engine_crashed_and_degraded() -> None:
    b = _backend("int8")
    await b.start()
    try:
        assert b._loaded is not None
        lane = b._loaded.lanes[0]
        real, lane.translator = lane.translator, _BrokenTranslator()
        with pytest.raises(EngineCrashed, match="failed twice") as info:
            await b.translate_batch(["Open the file"], "en", "es", GREEDY)
        assert isinstance(info.value.__cause__, RuntimeError)
        assert b.health() is Health.DEGRADED
        lane.translator = real
    finally:
        await b.close()


async def test_other_pair_is_refused(backend: CTranslate2Backend) -> None:
    with pytest.raises(UnsupportedPair):
        await backend.translate_batch(["Hola"], "es", "en", GREEDY)


async def test_missing_model_folder_is_a_config_error_naming_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-model"
    b = _backend("int8", missing)
    with pytest.raises(ConfigError, match=str(missing)):
        await b.start()
    assert b.health() is Health.DOWN


@pytest.mark.parametrize("compute_type", ["float16", "int8_float16", "bogus"])
async def test_unsupported_compute_type_is_a_config_error(compute_type: str) -> None:
    if "float16" in compute_type and ctranslate2.get_cuda_device_count() > 0:
        pytest.skip("float16 compute types are valid once a CUDA device is present")
    b = CTranslate2Backend("bad", REPO_MODELS_DIR / STUDENTS["int8"], "en", "es", compute_type=compute_type)
    with pytest.raises(ConfigError, match="compute_type"):
        await b.start()


async def test_down_before_start_and_after_close_and_refuses_work() -> None:
    b = _backend("int8")
    assert b.health() is Health.DOWN and not b.cost_model().warm
    with pytest.raises(Unavailable):
        await b.translate_batch(["Open the file"], "en", "es", GREEDY)
    await b.start()
    await b.close()
    assert b.health() is Health.DOWN and not b.cost_model().warm
    with pytest.raises(Unavailable):
        await b.translate_batch(["Open the file"], "en", "es", GREEDY)
    await b.close()  # closing twice is harmless


def _threads() -> dict[int, int]:
    """Native thread id -> nice value, for this process's live threads."""
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            out[int(tid)] = os.getpriority(os.PRIO_PROCESS, int(tid))
        except OSError:  # the thread ended while listing
            continue
    return out


@pytest.mark.skipif(not NICE_SUPPORTED, reason="per-thread nice values are a Linux feature")
async def test_bulk_replicas_decode_on_threads_at_the_bulk_nice_value() -> None:
    before = _threads()
    b = CTranslate2Backend("lanes", REPO_MODELS_DIR / STUDENTS["int8"], "en", "es",
                           inter_threads=1, intra_threads=1, bulk_replicas=1, bulk_nice=15)
    await b.start()
    try:
        # The throwaway thread that built the engine at nice 15 has been joined, but the kernel may list it for
        # a moment longer: wait (bounded) until only the engine's own threads are left.
        for _ in range(100):
            new = {tid: nice for tid, nice in _threads().items() if tid not in before}
            if list(new.values()).count(15) <= 1:
                break
            await asyncio.sleep(0.02)
        assert sorted(new.values()).count(15) == 1  # ctranslate2's one bulk replica; all else as before
        assert b.cost_model().bulk_slots == 1
        urgent = await b.translate_batch(["Open the file"], "en", "es", dataclasses.replace(GREEDY, urgent=True))
        bulk = await b.translate_batch(["Open the file"], "en", "es", GREEDY)
        assert urgent == bulk and urgent[0]
    finally:
        await b.close()
