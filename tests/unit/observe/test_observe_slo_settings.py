"""The `[slo]` config: defaults per class, partial classes keep their defaults, a wrong field is named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peakgate.config import PRIORITY_ORDER, Settings, load_settings
from peakgate.errors import ConfigError
from peakgate.observe.slo_settings import SloConfig


def test_defaults_name_one_slo_per_class_and_kind() -> None:
    slos = Settings().slo.definitions()
    assert [s.name for s in slos] == ["interactive_availability", "interactive_latency", "document_availability",
                                      "document_latency", "batch_availability"]
    latency = {s.name: s.threshold_s for s in slos if s.kind == "latency"}
    assert latency == {"interactive_latency": 0.3, "document_latency": 5.0}
    assert {s.priority for s in slos} <= set(PRIORITY_ORDER) <= set(SloConfig.model_fields)


def test_one_field_of_a_class_keeps_that_classs_other_defaults() -> None:
    config = SloConfig.model_validate({"document": {"latency": 0.95}, "batch": {"availability": None}})
    assert config.document.latency == 0.95 and config.document.latency_threshold_ms == 5_000.0
    assert [s.name for s in config.definitions() if s.priority == "batch"] == []


@pytest.mark.parametrize(("slo", "named"), [
    ({"interactive": {"availabilty": 0.999}}, "interactive.availabilty"),  # a typo
    ({"interactive": {"latency": 1.5}}, "interactive.latency"),  # not a share
    ({"premium": {"availability": 0.9}}, "premium"),  # not a class
    ({"period_days": 1}, "period_days"),  # shorter than the ticket pair's 3-day window
])
def test_a_wrong_field_is_a_config_error_naming_it(tmp_path: Path, slo: dict[str, object], named: str) -> None:
    path = tmp_path / "config.json"
    path.write_text(json.dumps({"slo": slo, "models": [], "apertium": {"discover": False}}))
    with pytest.raises(ConfigError) as error:
        load_settings(path)
    assert f"slo.{named}" in error.value.message
