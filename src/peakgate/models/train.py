"""Train a small Marian-style transformer on CPU (build-time only: needs the `[train]` extra)."""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm


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
    train_minutes: float = 60.0
    threads: int = 2
    seed: int = 13


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


def _batches(pairs: Sequence[tuple[list[int], list[int]]], batch_tokens: int, rng: random.Random) -> list[list[int]]:
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


def _tensors(pairs: Sequence[tuple[list[int], list[int]]], idx: list[int], pad: int) -> dict[str, Any]:
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


def train(
    pairs: Sequence[tuple[list[int], list[int]]], vocab: int, pad: int, recipe: Recipe, out_dir: Path,
    *, log: Callable[[str], None] = print,
) -> dict[str, Any]:
    """Train until the time budget is spent; save a HF model to `out_dir`; return stats."""
    import torch
    from transformers import MarianMTModel

    torch.manual_seed(recipe.seed)
    torch.set_num_threads(recipe.threads)
    rng = random.Random(recipe.seed)
    model = MarianMTModel(_marian_config(recipe, vocab, pad))
    params = sum(p.numel() for p in model.parameters())
    optim = torch.optim.AdamW(model.parameters(), lr=recipe.peak_lr, betas=(0.9, 0.98), weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        optim, lambda step: min((step + 1) / recipe.warmup_steps, math.sqrt(recipe.warmup_steps / (step + 1)))
    )
    loss_fn = torch.nn.CrossEntropyLoss(ignore_index=-100, label_smoothing=recipe.label_smoothing)
    started, step, epoch, last_loss = time.monotonic(), 0, 0, float("nan")
    budget_s = recipe.train_minutes * 60
    model.train()
    while time.monotonic() - started < budget_s:
        epoch += 1
        bar = tqdm(_batches(pairs, recipe.batch_tokens, rng), desc=f"epoch {epoch}", unit="batch")
        for idx in bar:
            batch = _tensors(pairs, idx, pad)
            labels = batch.pop("labels")
            logits = model(**batch).logits
            loss = loss_fn(logits.view(-1, logits.size(-1)), labels.view(-1))
            optim.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optim.step()
            sched.step()
            step += 1
            last_loss = 0.98 * last_loss + 0.02 * loss.item() if step > 1 else loss.item()
            bar.set_postfix(loss=f"{last_loss:.3f}")
            if time.monotonic() - started >= budget_s:
                break
        log(f"epoch {epoch} done: step {step} loss {last_loss:.3f} elapsed {time.monotonic() - started:.0f}s")
    model.save_pretrained(out_dir)
    stats = {"parameters": params, "steps": step, "epochs": epoch, "final_loss": round(last_loss, 4),
             "train_seconds": round(time.monotonic() - started, 1), "recipe": asdict(recipe)}
    (out_dir / "train_stats.json").write_text(json.dumps(stats, indent=2))
    return stats
