"""ModelRegistry: the configured models and their one-line-per-model listing."""

from __future__ import annotations

from pathlib import Path

import pytest

from peakgate.config import ModelConfig, Settings, default_models
from peakgate.errors import UnknownModel
from peakgate.models.registry import ModelRegistry


def test_listing_of_the_default_models_is_exact() -> None:
    settings = Settings(models=default_models(), models_dir=Path("/srv/models"))
    assert ModelRegistry(settings).format_listing() == (
        "apertium-en-es\tapertium\ten-es\t-\t-\n"
        "apertium-es-en\tapertium\tes-en\t-\t-\n"
        "student-en-es-int8\tctranslate2\ten-es\tint8\t/srv/models/student-en-es-int8\n"
        "student-en-es-fp32\tctranslate2\ten-es\tfloat32\t/srv/models/student-en-es-fp32\n"
        "student-en-es-large-int8\tctranslate2\ten-es\tint8\t/srv/models/student-en-es-large-int8\n"
        "student-en-es-large-fp32\tctranslate2\ten-es\tfloat32\t/srv/models/student-en-es-large-fp32"
    )


def test_default_settings_list_under_the_repo_models_dir() -> None:
    settings = Settings(models=default_models())
    lines = ModelRegistry(settings).format_listing().splitlines()
    assert len(lines) == 6
    assert all(len(line.split("\t")) == 5 for line in lines)
    assert lines[2].split("\t")[4] == str(settings.models_dir / "student-en-es-int8")


def test_unlabelled_ctranslate2_precision_falls_back_to_compute_type() -> None:
    model = ModelConfig(
        name="s", engine="ctranslate2", source="en", target="fr", path="/m/s", compute_type="int8_float32"
    )
    [entry] = ModelRegistry(Settings(models=(model,))).entries()
    assert entry.precision == "int8_float32"
    assert entry.line() == "s\tctranslate2\ten-fr\tint8_float32\t/m/s"


def test_entries_keep_configured_order_and_get_finds_by_name() -> None:
    registry = ModelRegistry(Settings(models=default_models()))
    assert [e.name for e in registry.entries()] == [m.name for m in default_models()]
    entry = registry.get("student-en-es-fp32")
    assert entry.config.compute_type == "float32" and entry.precision == "float32"


def test_get_unknown_model_raises_unknown_model() -> None:
    with pytest.raises(UnknownModel, match="student-en-es-int8"):
        ModelRegistry(Settings(models=default_models())).get("nope")
    with pytest.raises(UnknownModel, match="none configured"):
        ModelRegistry(Settings()).get("nope")
    assert ModelRegistry(Settings()).format_listing() == ""
