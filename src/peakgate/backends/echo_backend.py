"""Echo: returns every segment unchanged.

It exists to benchmark the gateway itself — admission, batching, routing, serialisation — with
no engine time in the way, and nothing is cached on this path, so every request does the full
trip. It keeps the real lifecycle (down until started, refuses unknown pairs) so the gateway
treats it exactly like any other engine.

`delay_ms` adds simulated engine time per batch (on the injected clock, no CPU): with it, a benchmark or a
fault test can hold batches in flight long enough to measure scale-out or kill a worker mid-batch.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from peakgate.backends.base import CostModel, DecodeOptions, Health
from peakgate.clock import Clock, MonotonicClock
from peakgate.errors import ConfigError, Unavailable, UnsupportedPair


class EchoBackend:
    """Identity "translation" for the given pairs; never fails once started."""

    def __init__(
        self, name: str, pairs: Iterable[tuple[str, str]], *, max_batch_size: int = 64, delay_ms: float = 0.0,
        clock: Clock | None = None,
    ) -> None:
        self._name = name
        self._pairs = frozenset(pairs)
        if not self._pairs:
            raise ConfigError(f"{name}: an echo backend needs at least one language pair")
        self._max_batch_size = max_batch_size
        self._delay_s = delay_ms / 1000.0
        self._clock = clock or MonotonicClock()
        self._started = False

    @property
    def name(self) -> str:
        return self._name

    @property
    def pairs(self) -> frozenset[tuple[str, str]]:
        return self._pairs

    async def start(self) -> None:
        self._started = True

    def cost_model(self) -> CostModel:
        return CostModel(self._max_batch_size, (self._max_batch_size,), self._started)

    def health(self) -> Health:
        return Health.OK if self._started else Health.DOWN

    async def translate_batch(
        self, segments: Sequence[str], source: str, target: str, options: DecodeOptions
    ) -> list[str]:
        if (source, target) not in self._pairs:
            raise UnsupportedPair(f"{self._name} does not translate {source}->{target}")
        if not self._started:
            raise Unavailable(f"{self._name} is not started")
        if self._delay_s > 0:
            await self._clock.sleep(self._delay_s)
        return list(segments)

    async def close(self) -> None:
        self._started = False
