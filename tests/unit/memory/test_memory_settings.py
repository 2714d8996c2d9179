from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from peakgate.memory.settings import TmConfig


def test_defaults() -> None:
    c = TmConfig()
    assert (c.enabled, c.backend, c.path, c.fuzzy_threshold, c.repair) == (True, "sqlite", None, 0.75, True)
    assert c.max_entry_chars == 5_000 and c.max_candidates >= 20


def test_frozen_and_strict() -> None:
    with pytest.raises(ValidationError):
        TmConfig(unknown=1)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        TmConfig(fuzzy_threshold=1.5)
    with pytest.raises(ValidationError):
        TmConfig(backend="postgres")  # type: ignore[arg-type]
    c = TmConfig(path=Path("x.db"))
    with pytest.raises(ValidationError):
        c.enabled = False
