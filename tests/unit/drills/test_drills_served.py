"""The config a drill serves: a valid gateway config, the drill's upstream first in the default tier only when
asked for, and only on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

from peakgate.config import Settings
from peakgate.drills.served import DRILL_MODELS, UPSTREAM_MODEL, drill_config


def test_without_an_upstream_the_tiny_tier_serves_everything(tmp_path: Path) -> None:
    settings = Settings.model_validate(drill_config(tmp_path))
    assert settings.tiers == {"tiny": DRILL_MODELS} and settings.default_tier == "tiny"
    assert settings.model(UPSTREAM_MODEL) is None


def test_the_upstream_goes_first_in_the_default_tier_with_the_engines_behind_it(tmp_path: Path) -> None:
    settings = Settings.model_validate(drill_config(tmp_path, "http://127.0.0.1:4321"))
    assert settings.default_tier == "large" and settings.tiers["large"] == (UPSTREAM_MODEL, *DRILL_MODELS)
    assert settings.tiers["tiny"] == DRILL_MODELS  # long batches and ladder level 3 never reach it
    upstream = settings.model(UPSTREAM_MODEL)
    assert upstream is not None and upstream.engine == "openai"
    assert upstream.base_url == "http://127.0.0.1:4321/v1"
