"""How many queue workers each model gets: one per unit that runs batches in parallel."""

from __future__ import annotations

from peakgate.config import ModelConfig

# An upstream LLM answers several requests at once; more than this only queues at its side.
UPSTREAM_CONCURRENCY = 4


def worker_count(model: ModelConfig) -> int:
    if model.engine == "apertium":
        return max(1, model.pipelines)
    if model.engine == "ctranslate2":
        return max(1, model.inter_threads) + model.bulk_replicas
    return UPSTREAM_CONCURRENCY if model.engine == "openai" else 1
