"""The installed Apertium pairs join the configured models: when, which, and where in each tier."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peakgate.backends.apertium_modes import ModePair
from peakgate.config import ModelConfig, Settings, default_models, default_tiers, load_settings, with_installed

INSTALLED = (ModePair("cat-eng", "ca", "en"), ModePair("eng-spa", "en", "es"), ModePair("es-pt", "es", "pt"),
             ModePair("spa-eng_US", "es", "en-us"))


def test_each_installed_pair_no_model_runs_joins_every_tier() -> None:
    settings = with_installed(Settings(models=default_models(), tiers=default_tiers()), INSTALLED)
    added = [m for m in settings.models if m not in default_models()]
    assert [(m.name, m.mode, m.source, m.target, m.pipelines) for m in added] == [
        ("apertium-ca-en", "cat-eng", "ca", "en", 1), ("apertium-es-pt", "es-pt", "es", "pt", 1),
        ("apertium-es-en-us", "spa-eng_US", "es", "en-us", 1),
    ]  # eng-spa already runs as apertium-en-es
    for tier, chain in default_tiers().items():
        # A regional model goes before its base language's, which would serve "en-us" too.
        before = chain[: chain.index("apertium-es-en")]
        after = chain[chain.index("apertium-es-en"):]
        assert settings.tiers[tier] == (*before, "apertium-es-en-us", *after, "apertium-ca-en", "apertium-es-pt")


def test_the_allow_list_takes_modes_or_pairs() -> None:
    base = Settings.model_validate({"apertium": {"allow": ["cat-eng", "es-pt"], "pipelines": 2}})
    settings = with_installed(base, INSTALLED)
    assert [(m.name, m.pipelines) for m in settings.models] == [("apertium-ca-en", 2), ("apertium-es-pt", 2)]


def _config(tmp_path: Path, data: dict[str, object]) -> Path:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(data))
    return path


def test_discovery_serves_the_embedded_default_and_configs_that_ask(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("peakgate.config.discover_modes", lambda: INSTALLED)
    assert "apertium-es-pt" in {m.name for m in load_settings().models}
    assert "apertium-es-pt" not in {m.name for m in load_settings(apertium={"discover": False}).models}
    echo = {"models": [ModelConfig(name="e", engine="echo", source="en", target="de").model_dump()]}
    assert [m.name for m in load_settings(_config(tmp_path, echo)).models] == ["e"]  # listed models: exactly those
    asked = load_settings(_config(tmp_path, echo | {"apertium": {"discover": True}}))
    assert [m.name for m in asked.models] == ["e", "apertium-ca-en", "apertium-en-es", "apertium-es-pt",
                                              "apertium-es-en-us"]
