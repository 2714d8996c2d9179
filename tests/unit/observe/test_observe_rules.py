"""The Prometheus rules: the committed files are exactly what `peakgate rules` generates from the default config,
and the generated alerts are the SRE workbook's pairs with each SLO's own objective."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from peakgate.cli import main
from peakgate.config import Settings
from peakgate.observe.rules import ALERTS_FILE, RECORDING_FILE, generate

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "prometheus"


def _rules(text: str) -> list[dict[str, Any]]:
    return [rule for group in yaml.safe_load(text)["groups"] for rule in group["rules"]]


def test_the_committed_rule_files_are_a_fresh_generation() -> None:
    # If this fails: `peakgate rules --out deploy/prometheus/` and commit the result.
    for name, text in generate(Settings().slo).items():
        assert (DEPLOY / name).read_text(encoding="utf-8") == text, f"deploy/prometheus/{name} has drifted"


def test_every_slo_gets_a_page_and_a_ticket_alert_from_its_objective() -> None:
    files = generate(Settings().slo)
    alerts = _rules(files[ALERTS_FILE])
    slos = [s.name for s in Settings().slo.definitions()]
    assert [(a["labels"]["slo"], a["labels"]["severity"]) for a in alerts] == [
        (slo, severity) for slo in slos for severity in ("page", "ticket")]
    page = alerts[0]["expr"]
    assert 'slo:peakgate_slo_error_ratio:rate1h{slo="interactive_availability"} > (14.4 * (1 - 0.999))' in page
    assert 'slo:peakgate_slo_error_ratio:rate30m{slo="interactive_availability"} > (6 * (1 - 0.999))' in page
    assert "rate3d" in alerts[1]["expr"] and "(1 * (1 - 0.999))" in alerts[1]["expr"]
    recorded = {r["record"] for r in _rules(files[RECORDING_FILE])}
    assert {f"slo:peakgate_slo_error_ratio:rate{w}" for w in ("5m", "30m", "1h", "6h", "3d")} <= recorded
    assert "endpoint:peakgate_request_latency_seconds:p99_rate5m" in recorded


def test_the_cli_writes_the_rules_of_the_given_config(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"models": [], "apertium": {"discover": False},
                                  "slo": {"period_days": 28, "interactive": {"availability": 0.995}}}))
    assert main(["rules", "--out", str(tmp_path / "rules"), "--config", str(config)]) == 0
    alerts = (tmp_path / "rules" / ALERTS_FILE).read_text(encoding="utf-8")
    assert "(13.44 * (1 - 0.995))" in alerts  # 2 % of a 28-day budget in an hour
    assert (tmp_path / "rules" / RECORDING_FILE).is_file()
