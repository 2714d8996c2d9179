"""The real Apertium engine: output equals the `apertium -u` CLI, pipelines survive being killed."""

from __future__ import annotations

import asyncio
import csv
import os
import signal
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from peakgate.backends.apertium import ApertiumBackend
from peakgate.backends.base import DecodeOptions, Health
from peakgate.errors import BadRequest, Unavailable

DEV = Path(__file__).resolve().parents[4] / "shared" / "data" / "dev.en-es.tsv"
OPTS = DecodeOptions()


def dev_sentences(n: int) -> list[str]:
    with DEV.open(encoding="utf-8") as fh:
        return [row[1] for row in csv.reader(fh, delimiter="\t", quoting=csv.QUOTE_NONE)][:n]


def cli(sentence: str) -> str:
    out = subprocess.run(["apertium", "-u", "eng-spa"], input=sentence, capture_output=True, text=True,
                         check=True, timeout=30)
    return out.stdout.rstrip("\n")


@pytest.fixture
async def backend() -> AsyncIterator[ApertiumBackend]:
    b = ApertiumBackend("apertium-en-es", "eng-spa", "en", "es", pipelines=2)
    await b.start()
    yield b
    await b.close()


async def test_output_equals_the_apertium_cli(backend: ApertiumBackend) -> None:
    sentences = [*dev_sentences(12), "Please close the door.", "Use *bold* and [brackets] ^here$ @ {x}"]
    ours = await backend.translate_batch(sentences, "en", "es", OPTS)
    assert ours == [cli(s) for s in sentences]


async def test_batch_order_and_empty_segments(backend: ApertiumBackend) -> None:
    out = await backend.translate_batch(["One cat.", "", "Two dogs."], "en", "es", OPTS)
    assert out == [cli("One cat."), "", cli("Two dogs.")]


async def test_killed_pipeline_is_restarted_and_the_batch_retried(backend: ApertiumBackend) -> None:
    before = await backend.translate_batch(["The house is red."], "en", "es", OPTS)
    for pipe in backend.pipelines:
        assert pipe.pid is not None
        os.killpg(pipe.pid, signal.SIGKILL)
    await asyncio.sleep(0.05)  # let the kernel reap the processes so the pipes report EOF
    assert backend.health() is not Health.OK
    after = await backend.translate_batch(["The house is red."], "en", "es", OPTS)
    assert after == before
    assert sum(p.restarts for p in backend.pipelines) >= 1


async def test_pipeline_killed_mid_batch_retries_the_batch_once() -> None:
    backend = ApertiumBackend("apertium-en-es", "eng-spa", "en", "es", pipelines=1)
    await backend.start()
    try:
        batch = dev_sentences(400)
        expected = await backend.translate_batch(batch, "en", "es", OPTS)
        task = asyncio.create_task(backend.translate_batch(batch, "en", "es", OPTS))
        await asyncio.sleep(0.02)  # the batch takes ~0.3 s: kill it part-way
        pid = backend.pipelines[0].pid
        assert pid is not None and not task.done()
        os.killpg(pid, signal.SIGKILL)
        assert await asyncio.wait_for(task, timeout=30) == expected
        assert backend.pipelines[0].restarts == 1
    finally:
        await backend.close()


async def test_concurrent_batches_use_both_pipelines(backend: ApertiumBackend) -> None:
    batches = [[f"Sentence number {i} is here."] * 20 for i in range(4)]
    outs = await asyncio.gather(*(backend.translate_batch(b, "en", "es", OPTS) for b in batches))
    assert [o[0] for o in outs] == [cli(b[0]) for b in batches]


async def test_bad_inputs_are_clear_errors(backend: ApertiumBackend) -> None:
    with pytest.raises(BadRequest, match="es->en"):
        await backend.translate_batch(["Hola"], "es", "en", OPTS)
    with pytest.raises(BadRequest, match="NUL"):
        await backend.translate_batch(["a\0b"], "en", "es", OPTS)


async def test_missing_mode_is_unavailable() -> None:
    with pytest.raises(Unavailable, match="not installed"):
        await ApertiumBackend("x", "eng-xxx", "en", "xx").start()
