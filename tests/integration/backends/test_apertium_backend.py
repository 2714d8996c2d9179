"""The real Apertium engine: output equals the `apertium -u` CLI, pipelines survive being killed."""

from __future__ import annotations

import asyncio
import csv
import os
import signal
import subprocess
from collections.abc import AsyncIterator

import pytest

from bench._common import default_dev_path
from peakgate.backends.apertium import ApertiumBackend, Pipeline
from peakgate.backends.base import DecodeOptions, Health
from peakgate.clock import FakeClock
from peakgate.config import Settings
from peakgate.errors import BadRequest, Unavailable
from peakgate.observe.metrics import Metrics
from peakgate.resilience.guard import OverloadGuard

DEV = default_dev_path()
OPTS = DecodeOptions()


def dev_sentences(n: int) -> list[str]:
    if not DEV.is_file():
        pytest.skip(f"dev set {DEV} is missing (../shared/data beside the clone)")
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


async def test_a_pipeline_that_keeps_failing_is_ejected_and_its_batches_served_elsewhere() -> None:
    clock = FakeClock()
    settings = Settings.model_validate({"resilience": {"outlier": {"min_requests": 3, "ejection_s": 10.0}}})
    metrics = Metrics()
    guard = OverloadGuard(settings.resilience, settings.classes, clock, metrics)
    backend = ApertiumBackend("apertium-en-es", "eng-spa", "en", "es", pipelines=2,
                              outliers=guard.outlier_detector("apertium-en-es", 2))
    await backend.start()
    try:
        backend.pipelines[1] = Pipeline("exit 3", 1.0)  # a replica that dies on every batch, even restarted
        expected = cli("The house is red.")
        for _ in range(4):  # two at once, so the second batch lands on the bad pipeline until it is ejected
            outs = await asyncio.gather(*(backend.translate_batch(["The house is red."], "en", "es", OPTS)
                                          for _ in range(2)))
            assert outs == [[expected], [expected]]  # its batches were retried on the good one
        assert backend.ejected() == [1] and backend.health() is Health.DEGRADED
        assert metrics.ejections.labels("apertium-en-es", "1")._value.get() == 1
        restarts = backend.pipelines[1].restarts
        await asyncio.gather(*(backend.translate_batch(["Hello."], "en", "es", OPTS) for _ in range(4)))
        assert backend.pipelines[1].restarts == restarts  # out of service: not tried
        clock.advance(10.0)
        assert backend.ejected() == []  # its ejection time is up: back in service, judged afresh
    finally:
        await backend.close()
