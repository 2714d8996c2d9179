"""What a served drill, surge or soak test needs: the engines the drill gateway runs (its default config)."""

from __future__ import annotations

import shutil

import pytest

from peakgate.backends.apertium import MODES_DIR
from peakgate.config import REPO_MODELS_DIR

DRILL_ENGINES = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("apertium") is None or not (MODES_DIR / "eng-spa.mode").is_file(),
                       reason="apertium eng-spa is not installed"),
    pytest.mark.skipif(not (REPO_MODELS_DIR / "student-en-es-int8" / "model.bin").is_file(),
                       reason="the int8 student is not built"),
]
