"""`peakgate checklist` on a tmp tree: each item passes or fails for the stated reason; any failure exits 1."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from peakgate.cli import _parser
from peakgate.drills.checklist import ChecklistConfig, run, run_checks

NOW = datetime(2026, 12, 5, 12, 0, tzinfo=UTC)


def _summary(multiplier: float = 10.0, started: str = "2026-12-01T10:00:00+00:00", ok: bool = True) -> str:
    return json.dumps({"profile": {"name": f"holiday-{multiplier:g}x", "multiplier": multiplier},
                       "started_at": started, "checks": {"counts_add_up": ok, "all_refusals_had_retry_after": ok}})


def _tree(root: Path, *, surge: str | None = None, drill: bool = True) -> Path:
    (root / "docs/surge").mkdir(parents=True)
    if surge is not None:
        (root / "docs/surge/holiday-10x.json").write_text(surge)
    if drill:
        (root / "docs/drills").mkdir()
        (root / "docs/drills/2026-11-20-redis-failover.md").write_text("# Drill\n")
    (root / "deploy/grafana").mkdir(parents=True)
    (root / "deploy/grafana/peakgate.json").write_text(json.dumps({"panels": [{"id": 1}, {"id": 2}]}))
    (root / "deploy/prometheus").mkdir(parents=True)
    (root / "deploy/prometheus/slo.rules.yml").write_text(
        "groups:\n- name: slo\n  rules:\n  - alert: BudgetBurn\n    expr: x > 1\n  - record: job:x:rate5m\n")
    return root


def _items(root: Path) -> dict[str, tuple[bool, str]]:
    return {i.name.split(" ")[0]: (i.passed, i.detail) for i in run_checks(ChecklistConfig(root=root), NOW)}


def test_everything_present_passes(tmp_path: Path) -> None:
    items = _items(_tree(tmp_path, surge=_summary()))
    assert all(passed for passed, _ in items.values()), items
    assert "holiday-10x at 10x" in items["surge"][1]
    assert "1 alerts, 1 recording rules" in items["alert"][1] and "2 panels" in items["dashboards"][1]


@pytest.mark.parametrize(("surge", "reason"), [
    (None, "no surge summary"),
    (_summary(multiplier=3), "only 3x"),
    (_summary(started="2026-09-01T10:00:00+00:00"), "older than 30 days"),
    (_summary(ok=False), "its checks failed"),
    ("[]", "not a surge summary"),
    ('{"profile": {}}', "not a surge summary"),
])
def test_the_surge_item_fails_with_its_reason(tmp_path: Path, surge: str | None, reason: str) -> None:
    passed, detail = _items(_tree(tmp_path, surge=surge))["surge"]
    assert not passed and reason in detail


def test_missing_drills_dashboards_and_rules_fail(tmp_path: Path) -> None:
    root = _tree(tmp_path, surge=_summary(), drill=False)
    (root / "deploy/grafana/peakgate.json").write_text('{"panels": []}')
    (root / "deploy/prometheus/slo.rules.yml").write_text("groups: []\n")
    items = _items(root)
    assert items["drill"] == (False, f"{root / 'docs/drills'} does not exist: run a drill and record it there")
    assert not items["dashboards"][0] and not items["alert"][0]


def test_the_command_prints_each_item_and_exits_1_on_a_failure(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    root = _tree(tmp_path, surge=_summary(), drill=False)
    args = _parser().parse_args(["checklist", "--root", str(root)])
    assert run(args, now=lambda: NOW) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line[:4] for line in lines[:4]] == ["PASS", "FAIL", "PASS", "PASS"] and lines[-1] == "3/4 passed"
    (root / "docs/drills").mkdir()
    (root / "docs/drills/record.json").write_text("{}")
    assert run(args, now=lambda: NOW) == 0
