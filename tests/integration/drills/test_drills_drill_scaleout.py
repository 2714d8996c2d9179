"""`peakgate drill --workers 2` on a scale-out deployment it starts itself (redis-server, two workers, a gateway):
a worker killed and Redis stopped mid-surge, and still no accepted job lost, no 5xx, every refusal with
Retry-After. Everything it started is gone afterwards."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from drill_needs import DRILL_ENGINES

pytestmark = [*DRILL_ENGINES,
              pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not found")]


def test_a_worker_killed_and_redis_stopped_lose_no_accepted_work(tmp_path: Path) -> None:
    out = tmp_path / "drills"
    done = subprocess.run([sys.executable, "-m", "peakgate.cli", "drill", "--workers", "2",
                           "--fault", "kill-worker@4s", "--fault", "stop-redis@7s:2s", "--duration", "14",
                           "--baseline-rps", "3", "--drain-s", "10", "--out", str(out)],
                          capture_output=True, text=True, timeout=150, check=False)
    assert done.returncode in (0, 1), done.stderr  # 1: a promise failed, reported in the record
    (path,) = out.glob("drill-kill-worker+stop-redis-*.json")
    record = json.loads(path.read_text())
    kill, stop = record["faults"]
    assert kill["target_pid"] is not None and stop["target_pid"] is not None
    assert kill["target_pid"] != stop["target_pid"]
    assert stop["ended_s"] - stop["at_s"] == pytest.approx(2.0, abs=0.5)
    for pid in (kill["target_pid"], stop["target_pid"]):
        assert not Path(f"/proc/{pid}").exists()  # the killed worker, and Redis once the drill stopped it
    promises = {p["name"]: p["passed"] for p in record["promises"]}
    assert promises["every fault was injected"] and promises["accepted jobs not lost"]
    assert promises["every refusal (429/503) had Retry-After"] and promises["no 5xx other than 503"]
    assert record["load"]["classes"]["interactive"]["accepted"] > 0
    assert max(w or 0 for w in record["load"]["server"]["workers"]) == 2  # both workers served before the kill
