"""`peakgate drill` against a served gateway with real Apertium pipelines: the killed pipeline really dies, the
gateway starts a new one, and the record holds the promises checked over the surge.

The test starts the gateway itself and gives the drill `--target` and `--pid`, so it can look at the pipelines
afterwards with its own eyes rather than the drill's.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from drill_needs import DRILL_ENGINES

from bench._http import serve
from peakgate.drills.faults import pipelines
from peakgate.drills.served import drill_config

pytestmark = DRILL_ENGINES
ARRIVALS_S, DRAIN_S = 12.0, 10.0


def test_a_short_drill_kills_a_pipeline_and_the_gateway_replaces_it(tmp_path: Path) -> None:
    out = tmp_path / "drills"
    with serve(drill_config(tmp_path / "data")) as server:
        before = pipelines(server.proc.pid, "eng-spa")
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "peakgate.cli", "drill", "--target", server.url,
                               "--pid", str(server.proc.pid), "--fault", "kill-pipeline@4s",
                               "--fault", "stall-pipeline@7s:2s", "--duration", str(ARRIVALS_S),
                               "--baseline-rps", "4", "--drain-s", str(DRAIN_S), "--out", str(out)],
                              capture_output=True, text=True, timeout=120, check=False)
        elapsed = time.monotonic() - started
        after = pipelines(server.proc.pid, "eng-spa")
    assert done.returncode == 0, done.stdout + done.stderr
    assert elapsed < ARRIVALS_S + DRAIN_S + 15  # it stopped by itself
    (record_path,) = out.glob("drill-kill-pipeline+stall-pipeline-*.json")
    assert record_path.with_suffix(".md").is_file()
    record = json.loads(record_path.read_text())
    assert record["verdict"] == "PASS" and record["load"]["target"] == server.url
    kill, stall = record["faults"]
    assert kill["target_pid"] in before and kill["target_pid"] not in after  # really gone
    assert kill["replaced_by"] in after and kill["replaced_by"] not in before  # and really replaced
    assert stall["target_pid"] in after and stall["ended_s"] - stall["at_s"] == pytest.approx(2.0, abs=0.5)
    assert len(after) == len(before) == 2
    names = {p["name"]: p["passed"] for p in record["promises"]}
    assert names["every refusal (429/503) had Retry-After"] and names["no 5xx other than 503"]
    assert names["accepted jobs not lost"] and names["every killed pipeline replaced within 30 s"]
    phases = {p["phase"]: p for p in record["phases"]}
    assert phases["before"]["offered"] > 0 and phases["during"]["offered"] > 0
    assert record["machine"]["cores"] >= 1 and record["fault_at_s"] == 4.0
    per_second, classes = record["load"]["per_second"], record["load"]["classes"].values()
    assert sum(per_second["offered"]) == sum(c["offered"] for c in classes) and len(per_second["t_s"]) == ARRIVALS_S
