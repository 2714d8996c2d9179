from __future__ import annotations

import json
from pathlib import Path

from peakgate.drills.drill_promises import PhaseFigures, Promise
from peakgate.drills.drill_record import DrillRecord, markdown, write_record
from peakgate.drills.faults import FaultEvent


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


def test_names_the_machine_the_note_and_each_fault(tmp_path: Path) -> None:
    base = _record(passed=True)
    event = FaultEvent("stall-pipeline@10s:5s", "stall-pipeline", 10.0, 15.0, 4242, outcome="stopped 4242 for 5.0 s")
    record = DrillRecord(base.scenario, base.started_at, base.fault_at_s, base.recovered_at_s, base.phases,
                         base.promises, [event], {"cores": 2, "load 1/5/15 min at start": "1.00/2.00/3.00"},
                         {"profile": "holiday-5x", "classes": {}}, "shared with a training job")
    text = markdown(record)
    assert "the last one over at 15.0 s" in text and "Note: shared with a training job" in text
    assert "cores 2, load 1/5/15 min at start 1.00/2.00/3.00" in text
    assert "| stall-pipeline@10s:5s | 10.0 s | 15.0 s | 4242 | stopped 4242 for 5.0 s |" in text
    json_path, _ = write_record(record, tmp_path)
    assert json.loads(json_path.read_text(encoding="utf-8"))["faults"][0]["target_pid"] == 4242
