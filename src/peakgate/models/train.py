"""Train a Marian-style student transformer on CPU, resumably (build-time only: needs the `[train]` extra).

A run that outlasts its process (a session ends, SIGTERM) checkpoints and carries on where it stopped
the next time it is started with the same checkpoint directory; see models/checkpoint.py.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from peakgate.models import checkpoint
from peakgate.models.checkpoint import Progress, TrainingInterrupted

CHECKPOINT_EVERY_S = 600.0
FINETUNE_WARMUP_STEPS = 100
Pairs = Sequence[tuple[list[int], list[int]]]


@dataclass(frozen=True)
class Recipe:
    vocab_size: int = 8000
    d_model: int = 256
    encoder_layers: int = 4
    decoder_layers: int = 2
    attention_heads: int = 4
    ffn_dim: int = 1024
    dropout: float = 0.1
    label_smoothing: float = 0.1
    peak_lr: float = 1e-3
    warmup_steps: int = 800
    batch_tokens: int = 3000
    max_tokens: int = 96
    train_minutes: float = 60.0  # training time over every resume together
    max_steps: int = 0  # 0: no step limit, only the time budget
    threads: int = 2
    seed: int = 13
    descriptions: bool = False  # add Debian package descriptions to the gettext corpus
    human_repeats: int = 1  # human pairs appear this many times per epoch; teacher output once
    bf16_autocast: bool = False  # forward pass in bfloat16 (fp32 master weights): ~1.9x faster on AMX CPUs
    # A last stage on the gettext catalogs alone (the served domain), from the main stage's weights with a fresh
    # optimiser: broad data teaches the language, this brings the model back to UI strings. 0: no such stage.
    finetune_steps: int = 0
    finetune_lr: float = 2e-4


# The shipped student, and a larger one on broader data. The large one's budget is in steps, so CPU
# contention from other work stretches its wall time but not what it learns; the minutes are only a cap.
# bfloat16 autocast (measured here: 1.29 s vs 2.40 s a step on 2 AMX cores) fits it in one session.
# docs/training.md has the arithmetic.
RECIPES: dict[str, Recipe] = {
    "student-en-es": Recipe(),
    "student-en-es-large": Recipe(
        vocab_size=12000, d_model=384, encoder_layers=6, decoder_layers=2, attention_heads=6, ffn_dim=1536,
        peak_lr=7e-4, warmup_steps=1000, batch_tokens=4000, max_steps=4_500, train_minutes=150.0,
        descriptions=True, human_repeats=2, bf16_autocast=True, finetune_steps=800,
    ),
}


def finetune_recipe(recipe: Recipe) -> Recipe:
    """The in-domain stage's recipe: the same network, its own short schedule and step budget."""
    return replace(recipe, peak_lr=recipe.finetune_lr, warmup_steps=FINETUNE_WARMUP_STEPS,
                   max_steps=recipe.finetune_steps, finetune_steps=0)


def _marian_config(recipe: Recipe, vocab: int, pad: int) -> Any:
    from transformers import MarianConfig

    return MarianConfig(
        vocab_size=vocab, d_model=recipe.d_model,
        encoder_layers=recipe.encoder_layers, decoder_layers=recipe.decoder_layers,
        encoder_attention_heads=recipe.attention_heads, decoder_attention_heads=recipe.attention_heads,
        encoder_ffn_dim=recipe.ffn_dim, decoder_ffn_dim=recipe.ffn_dim,
        dropout=recipe.dropout, max_position_embeddings=256, pad_token_id=pad, eos_token_id=0,
        decoder_start_token_id=pad, forced_eos_token_id=0, scale_embedding=True,
        share_encoder_decoder_embeddings=True, tie_word_embeddings=True,
    )


def _batches(pairs: Pairs, batch_tokens: int, rng: random.Random) -> list[list[int]]:
    """Length-bucketed batches of indices, shuffled."""
    order = sorted(range(len(pairs)), key=lambda i: (len(pairs[i][0]), rng.random()))
    batches: list[list[int]] = []
    current: list[int] = []
    longest = 0
    for i in order:
        longest = max(longest, len(pairs[i][0]), len(pairs[i][1]))
        if current and longest * (len(current) + 1) > batch_tokens:
            batches.append(current)
            current, longest = [], max(len(pairs[i][0]), len(pairs[i][1]))
        current.append(i)
    if current:
        batches.append(current)
    rng.shuffle(batches)
    return batches


def _tensors(pairs: Pairs, idx: list[int], pad: int) -> dict[str, Any]:
    import torch

    src = [pairs[i][0] for i in idx]
    tgt = [pairs[i][1] for i in idx]
    s_len, t_len = max(map(len, src)), max(map(len, tgt))
    input_ids = torch.full((len(idx), s_len), pad, dtype=torch.long)
    labels = torch.full((len(idx), t_len), -100, dtype=torch.long)
    decoder_in = torch.full((len(idx), t_len), pad, dtype=torch.long)
    for row, (s, t) in enumerate(zip(src, tgt, strict=True)):
        input_ids[row, : len(s)] = torch.tensor(s)
        labels[row, : len(t)] = torch.tensor(t)
        decoder_in[row, 1 : len(t)] = torch.tensor(t[:-1])
    return {"input_ids": input_ids, "attention_mask": input_ids.ne(pad), "labels": labels,
            "decoder_input_ids": decoder_in}


def _parts(recipe: Recipe, vocab: int, pad: int) -> dict[str, Any]:
    import torch
    from transformers import MarianMTModel

    model = MarianMTModel(_marian_config(recipe, vocab, pad))
    optim = torch.optim.AdamW(model.parameters(), lr=recipe.peak_lr, betas=(0.9, 0.98), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda step: min((step + 1) / recipe.warmup_steps, math.sqrt(recipe.warmup_steps / (step + 1)))
    )
    return {"model": model, "optim": optim, "sched": sched}


def _step(parts: dict[str, Any], batch: dict[str, Any], loss_fn: Any, *, bf16: bool) -> float:
    import torch

    model, optim = parts["model"], parts["optim"]
    labels = batch.pop("labels")
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        logits = model(**batch).logits
    loss = loss_fn(logits.float().view(-1, logits.size(-1)), labels.view(-1))
    optim.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optim.step()
    parts["sched"].step()
    return float(loss.item())


class _Run:
    """One process's share of a training run: the budget, the clock and the checkpoint cadence."""

    def __init__(self, recipe: Recipe, progress: Progress, checkpoint_dir: Path | None, *, every_s: float,
                 stop: Callable[[], bool], log: Callable[[str], None]) -> None:
        self.recipe, self.progress, self.checkpoint_dir, self.every_s = recipe, progress, checkpoint_dir, every_s
        self.stop, self.log = stop, log
        self._base_s, self._started = progress.elapsed_s, time.monotonic()
        self._last_save = self._started

    def tick(self) -> None:
        self.progress.elapsed_s = self._base_s + time.monotonic() - self._started

    def spent(self) -> bool:
        p, r = self.progress, self.recipe
        return p.elapsed_s >= r.train_minutes * 60 or 0 < r.max_steps <= p.step

    def checkpoint_due(self) -> bool:
        return self.checkpoint_dir is not None and time.monotonic() - self._last_save >= self.every_s

    def save(self, parts: dict[str, Any], rng: random.Random) -> None:
        if self.checkpoint_dir is None:
            return
        path = checkpoint.save(self.checkpoint_dir, parts, self.progress, asdict(self.recipe), rng)
        self._last_save = time.monotonic()
        p = self.progress
        self.log(f"checkpoint {path}: step {p.step} epoch {p.epoch} loss {p.loss:.3f} elapsed {p.elapsed_s:.0f}s "
            f"source tokens {p.source_tokens} ({p.source_tokens / max(p.elapsed_s, 1e-9):.0f}/s)")


def _epoch(pairs: Pairs, pad: int, parts: dict[str, Any], rng: random.Random, run: _Run) -> None:
    """Train on the rest of the current epoch, or until the budget is spent or a stop is asked for."""
    import torch

    p = run.progress
    if p.batch_in_epoch == 0:
        p.epoch += 1
        p.epoch_rng = rng.getstate()
    rng.setstate(p.epoch_rng)  # a resumed epoch redraws the same batch order, then skips what was done
    batches = _batches(pairs, run.recipe.batch_tokens, rng)
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=run.recipe.label_smoothing)
    bar = tqdm(batches, desc=f"epoch {p.epoch}", unit="batch", initial=p.batch_in_epoch, mininterval=30)
    for idx in batches[p.batch_in_epoch :]:
        loss = _step(parts, _tensors(pairs, idx, pad), loss_fn, bf16=run.recipe.bf16_autocast)
        p.step, p.batch_in_epoch = p.step + 1, p.batch_in_epoch + 1
        p.source_tokens += sum(len(pairs[i][0]) for i in idx)
        p.loss = 0.98 * p.loss + 0.02 * loss if p.step > 1 else loss
        bar.update()
        bar.set_postfix(loss=f"{p.loss:.3f}", refresh=False)
        run.tick()
        if run.stop():
            run.save(parts, rng)
            raise TrainingInterrupted(f"stopped at step {p.step}; rerun to resume from {run.checkpoint_dir}")
        if run.spent():
            return
        if run.checkpoint_due():
            run.save(parts, rng)
    bar.close()
    p.batch_in_epoch = 0
    run.log(f"epoch {p.epoch} done: step {p.step} loss {p.loss:.3f} elapsed {p.elapsed_s:.0f}s")


def train(
    pairs: Pairs, vocab: int, pad: int, recipe: Recipe, out_dir: Path, *, log: Callable[[str], None] = print,
    checkpoint_dir: Path | None = None, checkpoint_every_s: float = CHECKPOINT_EVERY_S,
    stop: Callable[[], bool] = lambda: False, init_from: Path | None = None,
) -> dict[str, Any]:
    """Train until the budget is spent, resuming from `checkpoint_dir` when it holds a checkpoint, else
    starting from the weights of the checkpoint in `init_from` (a previous stage) when given.

    Saves a HF model to `out_dir` and returns stats. When `stop()` turns true the run checkpoints and
    raises TrainingInterrupted; a later call with the same checkpoint directory carries on from there.
    """
    import torch

    torch.manual_seed(recipe.seed)
    torch.set_num_threads(recipe.threads)
    rng = random.Random(recipe.seed)
    parts = _parts(recipe, vocab, pad)
    resumed = checkpoint.load(checkpoint_dir, parts, asdict(recipe), rng) if checkpoint_dir else None
    if resumed:
        log(f"resuming from {checkpoint_dir}: step {resumed.step}, epoch {resumed.epoch}, {resumed.elapsed_s:.0f}s")
    elif init_from is not None:
        parts["model"].load_state_dict(checkpoint.weights(init_from))
        log(f"starting from the weights in {init_from}")
    run = _Run(recipe, resumed or Progress(), checkpoint_dir, every_s=checkpoint_every_s, stop=stop, log=log)
    parts["model"].train()
    while not run.spent():
        _epoch(pairs, pad, parts, rng, run)
    run.save(parts, rng)  # the final state, so a longer budget later carries on from here
    return _finish(parts["model"], run.progress, recipe, out_dir)


def _finish(model: Any, p: Progress, recipe: Recipe, out_dir: Path) -> dict[str, Any]:
    model.save_pretrained(out_dir)
    stats = {"parameters": sum(t.numel() for t in model.parameters()), "steps": p.step, "epochs": p.epoch,
             "final_loss": round(p.loss, 4), "train_seconds": round(p.elapsed_s, 1),
             "source_tokens": p.source_tokens, "source_tokens_per_s": round(p.source_tokens / max(p.elapsed_s, 1e-9)),
             "checkpoints": p.checkpoints, "recipe": asdict(recipe)}
    (out_dir / "train_stats.json").write_text(json.dumps(stats, indent=2))
    return stats
