"""The drill record: what was injected when, the per-phase figures, each promise PASS/FAIL, the verdict.

Written as JSON (for tools such as `peakgate checklist`) and Markdown (for the on-call) side by side.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from peakgate.drills.drill_promises import PhaseFigures, Promise
from peakgate.drills.faults import FaultEvent


@dataclass(frozen=True, slots=True)
class DrillRecord:
    scenario: str
    started_at: str  # wall-clock ISO 8601
    fault_at_s: float
    recovered_at_s: float | None
    phases: list[PhaseFigures]
    promises: list[Promise]
    faults: list[FaultEvent] = field(default_factory=list)
    machine: dict[str, Any] = field(default_factory=dict)  # cores, load averages at the start and the end
    load: dict[str, Any] = field(default_factory=dict)  # the surge: target, profile, totals per class
    note: str | None = None

    @property
    def passed(self) -> bool:
        return all(p.passed for p in self.promises)


def write_record(record: DrillRecord, out_dir: Path) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    stem = out_dir / f"drill-{record.scenario}-{record.started_at[:19].replace(':', '')}"
    data = {**asdict(record), "verdict": "PASS" if record.passed else "FAIL"}
    json_path, md_path = stem.with_suffix(".json"), stem.with_suffix(".md")
    json_path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    md_path.write_text(markdown(record), encoding="utf-8")
    return [json_path, md_path]


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1000:.0f} ms"


def markdown(record: DrillRecord) -> str:
    recovered = "never" if record.recovered_at_s is None else f"{record.recovered_at_s:.1f} s"
    over = f", the last one over at {max(e.ended_s for e in record.faults):.1f} s" if record.faults else ""
    lines = [f"# Drill: {record.scenario} — {'PASS' if record.passed else 'FAIL'}", "",
             f"Started {record.started_at}; fault injected at {record.fault_at_s:.1f} s{over}; served again "
             f"(interactive) from {recovered}.",
             *_context(record),
             "", "| phase | interactive offered | accepted | availability | p99 |", "|---|---|---|---|---|"]
    for p in record.phases:
        avail = "-" if p.availability is None else f"{p.availability:.1%}"
        lines.append(f"| {p.phase} | {p.offered} | {p.accepted} | {avail} | {_ms(p.p99_s)} |")
    lines += ["", "| promise | result | detail |", "|---|---|---|"]
    lines += [f"| {p.name} | {'PASS' if p.passed else 'FAIL'} | {p.detail} |" for p in record.promises]
    return "\n".join(lines) + "\n"


def _context(record: DrillRecord) -> list[str]:
    lines = []
    if record.note:
        lines += ["", f"Note: {record.note}"]
    if record.machine:
        lines += ["", "Machine: " + ", ".join(f"{k} {v}" for k, v in record.machine.items())]
    if record.load:
        lines += ["", "Load: " + ", ".join(f"{k} {v}" for k, v in record.load.items() if not isinstance(v, dict))]
        for klass, f in record.load.get("classes", {}).items():
            lines.append(f"- {klass}: offered {f['offered']}, accepted {f['accepted']}, shed {f['shed']}, "
                         f"errors {f['errors']}, generator-dropped {f['generator_dropped']}")
    if record.faults:
        lines += ["", "| fault | injected at | over at | process | outcome |", "|---|---|---|---|---|"]
        lines += [f"| {e.fault} | {e.at_s:.1f} s | {e.ended_s:.1f} s | {e.target_pid or '-'} | {e.outcome} |"
                  for e in record.faults]
    return lines
