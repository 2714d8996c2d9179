from __future__ import annotations

import json
from pathlib import Path

from peakgate.drills.drill_promises import PhaseFigures, Promise
from peakgate.drills.drill_record import DrillRecord, write_record


def _record(passed: bool) -> DrillRecord:
    return DrillRecord("kill-engine-pipeline", "2026-12-05T13:00:00+00:00", 10.0, 14.5,
                       [PhaseFigures("before", 10, 10, 1.0, 0.05), PhaseFigures("during", 5, 3, 0.6, None),
                        PhaseFigures("after", 8, 8, 1.0, 0.07)],
                       [Promise("a", True, "ok"), Promise("b", passed, "why")])


def test_writes_json_and_markdown_with_verdict(tmp_path: Path) -> None:
    json_path, md_path = write_record(_record(passed=False), tmp_path)
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert data["verdict"] == "FAIL" and data["fault_at_s"] == 10.0 and len(data["phases"]) == 3
    text = md_path.read_text(encoding="utf-8")
    assert "FAIL" in text and "| during | 5 | 3 | 60.0% | - |" in text


def test_passes_only_when_every_promise_holds() -> None:
    assert _record(passed=True).passed
    assert not _record(passed=False).passed
