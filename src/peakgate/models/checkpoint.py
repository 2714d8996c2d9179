"""Training checkpoints that survive the process: written atomically, resumed exactly.

A build session lasts at most a few hours and its background processes die with it, so a long
training run is a series of resumes. The checkpoint holds everything the next step depends on
(weights, optimizer moments, LR schedule, both RNGs, where in which epoch's batch order we are),
so a resumed run takes the same steps an uninterrupted one would have.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import signal
import threading
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

FILE = "checkpoint.pt"
# Fields that shape the model or its optimisation: resuming under a recipe that changed one of these would
# load weights into the wrong network or continue a different schedule. The budget fields may change.
_RESUMABLE_CHANGES = frozenset({"train_minutes", "max_steps", "threads", "bf16_autocast", "finetune_steps",
                                "finetune_lr"})


class TrainingInterrupted(Exception):
    """A stop was requested; the checkpoint is saved and a rerun resumes from it."""


@dataclass
class Progress:
    step: int = 0
    epoch: int = 0  # epochs started
    batch_in_epoch: int = 0  # batches of the current epoch already trained on
    epoch_rng: Any = None  # the batch RNG's state before the current epoch's order was drawn
    elapsed_s: float = 0.0  # training time over every run so far, the budget's measure
    source_tokens: int = 0
    loss: float = math.nan  # exponential moving average
    checkpoints: int = 0


def save(directory: Path, parts: dict[str, Any], progress: Progress, recipe: dict[str, Any],
         rng: random.Random) -> Path:
    """Write `checkpoint.pt` via a temporary file and a rename, so a kill mid-write leaves the old one intact."""
    import torch

    directory.mkdir(parents=True, exist_ok=True)
    progress.checkpoints += 1
    blob = {name: part.state_dict() for name, part in parts.items()}
    blob |= {"progress": asdict(progress), "recipe": recipe, "rng": rng.getstate(), "torch_rng": torch.get_rng_state()}
    target, tmp = directory / FILE, directory / (FILE + ".tmp")
    with tmp.open("wb") as fh:
        torch.save(blob, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, target)
    return target


def load(directory: Path, parts: dict[str, Any], recipe: dict[str, Any], rng: random.Random) -> Progress | None:
    """Restore `parts` and both RNGs from the checkpoint, if there is one; its progress, else None."""
    import torch

    path = directory / FILE
    if not path.exists():
        return None
    blob = torch.load(path, weights_only=True)
    changed = {k for k in recipe if blob["recipe"].get(k) != recipe[k]} - _RESUMABLE_CHANGES
    if changed:
        raise ValueError(f"checkpoint {path} was trained under another recipe ({', '.join(sorted(changed))} differ)")
    for name, part in parts.items():
        part.load_state_dict(blob[name])
    rng.setstate(_as_rng_state(blob["rng"]))
    torch.set_rng_state(blob["torch_rng"])
    return Progress(**blob["progress"])


def weights(directory: Path) -> dict[str, Any]:
    """The model weights alone of the checkpoint in `directory`, to start another stage from."""
    import torch

    path = directory / FILE
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint to start from in {directory}")
    state: dict[str, Any] = torch.load(path, weights_only=True)["model"]
    return state


def _as_rng_state(state: Any) -> Any:
    # The state comes back from torch.load with lists where random.setstate wants tuples.
    version, internal, gauss = state
    return version, tuple(internal), gauss


@contextlib.contextmanager
def stop_on_signals(*signums: int) -> Iterator[threading.Event]:
    """An event set by SIGTERM/SIGINT (or the given signals): the trainer checkpoints and stops at the next step."""
    event = threading.Event()
    wanted = signums or (signal.SIGTERM, signal.SIGINT)
    previous = {s: signal.signal(s, lambda _signum, _frame: event.set()) for s in wanted}
    try:
        yield event
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
