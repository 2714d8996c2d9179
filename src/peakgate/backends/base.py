"""The one protocol every engine implements; the scheduler only ever talks to this."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True, slots=True)
class DecodeOptions:
    """Per-request-class decoding knobs (engines that have no search ignore them)."""

    beam_size: int = 1
    max_decoding_length: int = 256
    # Set by the executor for a batch of the most urgent class, never part of a batch key: an engine with a
    # priority lane runs such a batch there.
    urgent: bool = False


@dataclass(frozen=True, slots=True)
class CostModel:
    """What the batcher needs to know to size work for an engine."""

    max_batch_size: int
    preferred_batch_sizes: tuple[int, ...]
    warm: bool
    # Replicas that run only lower-class work at a lower CPU priority: while interactive traffic is recent,
    # lower classes are held to these and may fill them without a size cap (they yield the CPU anyway).
    bulk_slots: int = 0


class Health(enum.Enum):
    OK = "ok"
    DEGRADED = "degraded"
    DOWN = "down"


class Backend(Protocol):
    """A translation engine for one or more language pairs."""

    @property
    def name(self) -> str: ...

    @property
    def pairs(self) -> frozenset[tuple[str, str]]: ...

    async def start(self) -> None:
        """Load and warm up; after this `cost_model().warm` is true."""

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        """Translate segments in order; one output per input."""

    def cost_model(self) -> CostModel: ...

    def health(self) -> Health: ...

    async def close(self) -> None: ...
