"""Training checkpoints: an interrupted and resumed run takes exactly the steps an uninterrupted one does."""

from __future__ import annotations

import dataclasses
import os
import random
import signal
from pathlib import Path
from typing import Any

import pytest

from peakgate.models.checkpoint import FILE, TrainingInterrupted, stop_on_signals

# CI does not install the `[train]` extra: these tests need it, the rest of the suite does not.
torch = pytest.importorskip("torch", reason="needs the [train] extra (torch)")
pytest.importorskip("transformers", reason="needs the [train] extra (transformers)")

from peakgate.models.train import Recipe, finetune_recipe, train  # noqa: E402  (after the skip: imports torch lazily but needs it)

VOCAB, PAD = 24, 23
TINY = Recipe(vocab_size=VOCAB, d_model=16, encoder_layers=1, decoder_layers=1, attention_heads=2, ffn_dim=32,
              warmup_steps=2, batch_tokens=40, train_minutes=10.0, max_steps=9, threads=1)


def _pairs() -> list[tuple[list[int], list[int]]]:
    rng = random.Random(5)
    return [([rng.randrange(1, PAD) for _ in range(rng.randrange(2, 8))] + [0],
             [rng.randrange(1, PAD) for _ in range(rng.randrange(2, 8))] + [0]) for _ in range(16)]


def _weights(hf_dir: Path) -> dict[str, Any]:
    from transformers import MarianMTModel

    return dict(MarianMTModel.from_pretrained(str(hf_dir)).state_dict())


def _stop_after(step: int) -> Any:
    calls = iter(range(1, 10_000))
    return lambda: next(calls) >= step


def test_interrupted_and_resumed_run_matches_an_uninterrupted_one(tmp_path: Path) -> None:
    straight = train(_pairs(), VOCAB, PAD, TINY, tmp_path / "straight", log=lambda _: None)
    ckpt = tmp_path / "ckpt"
    with pytest.raises(TrainingInterrupted, match="step 4"):
        train(_pairs(), VOCAB, PAD, TINY, tmp_path / "a", checkpoint_dir=ckpt, stop=_stop_after(4), log=lambda _: None)
    assert (ckpt / FILE).exists() and not (ckpt / (FILE + ".tmp")).exists()
    logs: list[str] = []
    resumed = train(_pairs(), VOCAB, PAD, TINY, tmp_path / "b", checkpoint_dir=ckpt, log=logs.append)
    assert any("resuming" in line and "step 4" in line for line in logs)
    assert resumed["steps"] == straight["steps"] == 9 and resumed["epochs"] == straight["epochs"] > 1
    assert resumed["source_tokens"] == straight["source_tokens"]
    a, b = _weights(tmp_path / "straight"), _weights(tmp_path / "b")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_a_finetune_stage_starts_from_the_first_stages_weights(tmp_path: Path) -> None:
    first = tmp_path / "first"
    train(_pairs(), VOCAB, PAD, TINY, tmp_path / "a", checkpoint_dir=first, log=lambda _: None)
    # No budget at all: the stage saves what it started from, which must be the first stage's weights.
    stage = dataclasses.replace(finetune_recipe(dataclasses.replace(TINY, finetune_steps=3)), train_minutes=0.0)
    logs: list[str] = []
    train(_pairs(), VOCAB, PAD, stage, tmp_path / "b", checkpoint_dir=tmp_path / "ft", init_from=first, log=logs.append)
    a, b = _weights(tmp_path / "a"), _weights(tmp_path / "b")
    assert all(torch.equal(a[k], b[k]) for k in a) and any("starting from" in line for line in logs)
    ran = train(_pairs(), VOCAB, PAD, finetune_recipe(dataclasses.replace(TINY, finetune_steps=3)), tmp_path / "c",
                checkpoint_dir=tmp_path / "ft2", init_from=first, log=lambda _: None)
    assert ran["steps"] == 3 and ran["recipe"]["peak_lr"] == TINY.finetune_lr


def test_a_finetune_stage_without_a_first_checkpoint_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="no checkpoint"):
        train(_pairs(), VOCAB, PAD, TINY, tmp_path / "b", init_from=tmp_path / "missing", log=lambda _: None)


def test_the_time_budget_counts_every_run(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    with pytest.raises(TrainingInterrupted):
        train(_pairs(), VOCAB, PAD, TINY, tmp_path / "a", checkpoint_dir=ckpt, stop=_stop_after(3), log=lambda _: None)
    # A budget the first run already used up: the resumed run trains no further (with the clock restarted at
    # zero it would take a step before looking) and just saves the model.
    spent = dataclasses.replace(TINY, train_minutes=1e-9)
    stats = train(_pairs(), VOCAB, PAD, spent, tmp_path / "b", checkpoint_dir=ckpt, log=lambda _: None)
    assert stats["steps"] == 3
    assert (tmp_path / "b" / "train_stats.json").exists()


def test_a_checkpoint_of_another_model_shape_is_refused(tmp_path: Path) -> None:
    ckpt = tmp_path / "ckpt"
    train(_pairs(), VOCAB, PAD, dataclasses.replace(TINY, max_steps=2), tmp_path / "a", checkpoint_dir=ckpt,
          log=lambda _: None)
    wider = dataclasses.replace(TINY, d_model=32)
    with pytest.raises(ValueError, match="d_model"):
        train(_pairs(), VOCAB, PAD, wider, tmp_path / "b", checkpoint_dir=ckpt, log=lambda _: None)


def test_sigterm_sets_the_stop_event_and_the_old_handler_comes_back() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with stop_on_signals() as stop:
        assert not stop.is_set()
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5)
    assert signal.getsignal(signal.SIGTERM) == before
