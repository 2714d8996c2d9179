"""The reuse stage of the request path: translation memory and cache in front of the engines.

Order per segment (texts arrive already shielded: no PII, glossary terms as placeholders):
1. TM exact match → served from the TM (human translations win over any cached machine output);
2. cache (L1, then the shared L2) → served from the cache; one fill per key across concurrent requests;
3. on a miss, TM fuzzy match with a one-span repair → served repaired (and cached);
4. everything left → one engine call for the whole request.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

from peakgate.cache import CacheConfig, KeyParts, TranslationCache, cache_key
from peakgate.memory import TranslationMemory
from peakgate.observe.metrics import Metrics

Origin = Literal["engine", "cache", "tm_exact", "tm_repaired"]
EngineFn = Callable[[list[str]], Awaitable[list[str]]]


@dataclass(frozen=True, slots=True)
class Served:
    text: str
    origin: Origin
    score: float | None = None  # TM match score, for TM-served segments


@dataclass(frozen=True, slots=True)
class Scope:
    """Everything besides the text that decides the output: part of every cache key, and the TM's scope."""

    tenant: str
    source: str
    target: str
    model: str  # what serves a miss: tier, primary model and decoding, e.g. "medium/student-en-es-int8/b1"
    formality: str | None = None
    glossary_id: str | None = None
    repair: bool = True  # fuzzy TM repair allowed (off under degradation)


class Reuse:
    def __init__(
        self,
        cache: TranslationCache | None,
        memory: TranslationMemory | None,
        cache_config: CacheConfig,
        metrics: Metrics,
    ) -> None:
        self._cache = cache
        self._memory = memory
        self._cache_config = cache_config
        self._served = {origin: metrics.segments_served.labels(origin) for origin in get_args(Origin)}

    async def serve(self, texts: Sequence[str], scope: Scope, engine: EngineFn) -> list[Served]:
        memory = self._memory
        if memory is not None and not memory.serves(scope.tenant, scope.source, scope.target):
            memory = None
        served: list[Served | None] = [self._exact(memory, text, scope) for text in texts]
        rest = [i for i, s in enumerate(served) if s is None]
        filled: dict[int, Served] = {}

        async def fill(indices: list[int]) -> list[str]:
            results = await self._fill(memory, [texts[rest[j]] for j in indices], scope, engine)
            for j, result in zip(indices, results, strict=True):
                filled[rest[j]] = result
            return [r.text for r in results]

        if rest and self._cache is not None:
            parts = KeyParts(scope.source, scope.target, scope.model, scope.formality, scope.glossary_id,
                             tenant=scope.tenant)
            keys = [cache_key(texts[i], parts, self._cache_config) for i in rest]
            outputs = await self._cache.get_or_fill(keys, fill)
            for i, text in zip(rest, outputs, strict=True):
                # Filled here: the fill's own origin, re-cased by the cache; otherwise a hit (or another's fill).
                origin = filled[i] if i in filled else Served(text, "cache")
                served[i] = Served(text, origin.origin, origin.score)
        elif rest:
            await fill(list(range(len(rest))))
            for i in rest:
                served[i] = filled[i]
        done = [s for s in served if s is not None]
        assert len(done) == len(texts)  # every index was served by exactly one step above
        for s in done:
            self._served[s.origin].inc()
        return done

    @staticmethod
    def _exact(memory: TranslationMemory | None, text: str, scope: Scope) -> Served | None:
        if memory is None:
            return None
        match = memory.exact(scope.tenant, scope.source, scope.target, text)
        if match is None:
            return None
        return Served(match.entry.target, "tm_exact", match.score)

    @staticmethod
    async def _fill(memory: TranslationMemory | None, texts: list[str], scope: Scope,
                    engine: EngineFn) -> list[Served]:
        results: list[Served | None] = [None] * len(texts)
        if memory is not None and scope.repair and memory.config.repair:
            async def spans(batch: Sequence[str], _source: str, _target: str) -> Sequence[str]:
                return await engine(list(batch))

            for k, text in enumerate(texts):
                found = await memory.lookup_or_repair(scope.tenant, scope.source, scope.target, text, spans)
                if found is not None and found.text is not None:
                    results[k] = Served(found.text, "tm_exact" if found.kind == "exact" else "tm_repaired",
                                        found.score)
        todo = [k for k, r in enumerate(results) if r is None]
        if todo:
            outputs = await engine([texts[k] for k in todo])
            for k, out in zip(todo, outputs, strict=True):
                results[k] = Served(out, "engine")
        return [r for r in results if r is not None]
