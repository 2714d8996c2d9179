"""The configured models, as `peakgate models list` shows them."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from peakgate.backends.factory import resolve_model_path
from peakgate.config import ModelConfig, Settings
from peakgate.errors import UnknownModel


@dataclass(frozen=True, slots=True)
class ModelEntry:
    config: ModelConfig
    precision: str
    path: Path | None  # resolved against the models folder

    @property
    def name(self) -> str:
        return self.config.name

    def line(self) -> str:
        """`NAME\\tENGINE\\tSRC-TGT\\tPRECISION\\tPATH`, `-` for no path."""
        c = self.config
        return "\t".join((c.name, c.engine, f"{c.source}-{c.target}", self.precision, str(self.path or "-")))


def _precision(config: ModelConfig) -> str:
    # An unlabelled ctranslate2 model still has a definite precision: the compute type it loads with.
    if config.precision == "-" and config.engine == "ctranslate2":
        return config.compute_type
    return config.precision


class ModelRegistry:
    """Read-only view of `settings.models`, in configured order."""

    def __init__(self, settings: Settings) -> None:
        self._entries = tuple(
            ModelEntry(m, _precision(m), resolve_model_path(m, settings.models_dir)) for m in settings.models
        )

    def entries(self) -> tuple[ModelEntry, ...]:
        return self._entries

    def get(self, name: str) -> ModelEntry:
        for entry in self._entries:
            if entry.name == name:
                return entry
        known = ", ".join(e.name for e in self._entries) or "none configured"
        raise UnknownModel(f"unknown model {name!r} (known: {known})")

    def format_listing(self) -> str:
        return "\n".join(entry.line() for entry in self._entries)
