"""Which model served each segment once quality fallback may have moved some of them to another engine."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from peakgate.glossary import Shielded
from peakgate.reuse import Served


def models_serving(
    served: Sequence[Served], shields: Sequence[Shielded], engines: Mapping[str, str], default: str
) -> tuple[list[str], dict[str, int]]:
    """The model behind each segment (cache and TM hits: the route's), and engine characters per model."""
    models: list[str] = []
    chars: dict[str, int] = {}
    for s, sh in zip(served, shields, strict=True):
        name = engines.get(sh.text, default) if s.origin == "engine" else default
        models.append(name)
        if s.origin == "engine":
            chars[name] = chars.get(name, 0) + len(sh.text)
    return models, chars
