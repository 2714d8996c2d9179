"""The committed rules through Prometheus's own tool: `promtool check rules` passes, and `promtool test rules`
shows the generated alert paging on an outage that the recorded error ratios see."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from peakgate.observe.rules import ALERTS_FILE, RECORDING_FILE

DEPLOY = Path(__file__).resolve().parents[3] / "deploy" / "prometheus"
RULE_FILES = [DEPLOY / RECORDING_FILE, DEPLOY / ALERTS_FILE]
SLO = "interactive_availability"


def _promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        pytest.skip("promtool not found (Debian's prometheus package has it; scripts/dev-setup installs it)")
    return found


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([_promtool(), *args], capture_output=True, text=True, timeout=60, check=False)


def test_promtool_check_rules_passes_on_the_committed_files() -> None:
    done = _run("check", "rules", *map(str, RULE_FILES))
    assert done.returncode == 0, done.stdout + done.stderr


def _alert(slo: str, severity: str) -> dict[str, Any]:
    groups = yaml.safe_load((DEPLOY / ALERTS_FILE).read_text(encoding="utf-8"))["groups"]
    (rule,) = [r for g in groups for r in g["rules"] if r["labels"] == {"slo": slo, "severity": severity}]
    return {"exp_labels": rule["labels"], "exp_annotations": rule["annotations"]}


def test_an_outage_pages_and_opens_a_ticket(tmp_path: Path) -> None:
    # An hour at 600 good requests a minute, then ten minutes of nothing but failures (600 a minute).
    series = [
        {"series": f'peakgate_slo_events_total{{slo="{SLO}",outcome="good"}}',
         "values": "0+600x60 36000x10 36000+600x19"},
        {"series": f'peakgate_slo_events_total{{slo="{SLO}",outcome="bad"}}', "values": "0x60 600+600x10 6600x19"},
    ]
    case = {
        "interval": "1m",
        "input_series": series,
        "alert_rule_test": [
            {"eval_time": "60m", "alertname": "PeakgateErrorBudgetBurn", "exp_alerts": []},
            {"eval_time": "65m", "alertname": "PeakgateErrorBudgetBurn",
             "exp_alerts": [_alert(SLO, "page"), _alert(SLO, "ticket")]},
        ],
        "promql_expr_test": [
            {"expr": f'slo:peakgate_slo_error_ratio:rate5m{{slo="{SLO}"}}', "eval_time": "65m",
             "exp_samples": [{"labels": f'slo:peakgate_slo_error_ratio:rate5m{{slo="{SLO}"}}', "value": 1}]},
        ],
    }
    tests = tmp_path / "rules.test.yml"
    tests.write_text(json.dumps({"rule_files": [str(p) for p in RULE_FILES], "evaluation_interval": "1m",
                                 "tests": [case]}))
    done = _run("test", "rules", str(tests))
    assert done.returncode == 0, done.stdout + done.stderr
