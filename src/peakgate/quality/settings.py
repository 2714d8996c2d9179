"""Quality-estimation settings (`[quality]`); the thresholds are tuned on the dev set (docs/quality.md)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field


class QualityConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    # Check every engine-translated segment and re-translate the failing ones with the next engine of the
    # tier's chain, serving the better candidate. Off: outputs are served as the engine gave them.
    enabled: bool = True
    # Engines whose outputs are checked. Echo is no translation (every output equals its input).
    engines: tuple[str, ...] = ("ctranslate2", "apertium", "openai")
    # Below this mean token log-probability (the engine's own confidence, 0 = certain) a segment fails. Engines
    # without scores (Apertium, upstream LLMs) are never low-confidence.
    min_confidence: float = Field(default=-0.65, le=0.0)
    # An output the detector calls the source language with at least this confidence fails (above 1: off).
    source_language_confidence: float = Field(default=0.8, ge=0.0)
    # Output characters / source characters outside these bounds fail, for sources of `length_ratio_min_chars`
    # or more (short ones vary too much: "OK" -> "Aceptar"). `pair_length_ratio` overrides per "src-tgt".
    length_ratio: tuple[float, float] = (0.5, 2.5)
    pair_length_ratio: dict[str, tuple[float, float]] = Field(default_factory=dict)
    length_ratio_min_chars: int = Field(default=20, ge=1)

    def length_bounds(self, source: str, target: str) -> tuple[float, float]:
        return self.pair_length_ratio.get(f"{source}-{target}", self.length_ratio)
