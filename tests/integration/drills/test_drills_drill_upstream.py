"""`peakgate drill --fault fail-upstream@…` for real: the drill starts its own OpenAI-compatible upstream and a
gateway that tries it first, makes it answer HTTP 500 for a few seconds, and the gateway's breaker and fallbacks
must carry the traffic through: nothing lost, nothing failed, the breaker open during the fault and closed after.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from drill_needs import DRILL_ENGINES

pytestmark = DRILL_ENGINES
ARRIVALS_S, DRAIN_S = 14.0, 8.0


def test_a_failing_upstream_is_carried_by_the_breaker_and_the_fallbacks(tmp_path: Path) -> None:
    out = tmp_path / "drills"
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "peakgate.cli", "drill", "--fault", "fail-upstream@3s:5s",
                           "--duration", str(ARRIVALS_S), "--baseline-rps", "4", "--drain-s", str(DRAIN_S),
                           "--out", str(out)], capture_output=True, text=True, timeout=120, check=False)
    elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stdout + done.stderr
    assert elapsed < ARRIVALS_S + DRAIN_S + 20  # it stopped by itself (start-up of two servers included)
    (record_path,) = out.glob("drill-fail-upstream-*.json")
    record = json.loads(record_path.read_text())
    assert record["verdict"] == "PASS"
    (fault,) = record["faults"]
    assert fault["ended_s"] - fault["at_s"] == pytest.approx(5.0, abs=0.5)
    assert not Path(f"/proc/{fault['target_pid']}").exists()  # the drill stopped its upstream afterwards
    promises = {p["name"]: p for p in record["promises"]}
    during = promises["while the upstream failed: served by a fallback or refused with Retry-After"]
    assert during["passed"] and not during["detail"].startswith("0 arrivals")
    assert promises["upstream-en-es's breaker opened during the fault and closed after it"]["passed"]
    server = record["load"]["server"]
    states = dict(zip(server["t_s"], server["upstream_breaker"], strict=True))
    assert "open" in {s for t, s in states.items() if 3.0 <= t <= 10.0}  # tripped by the fault's 500s
    assert server["upstream_breaker"][-1] == "closed"
    assert all(c["errors"] == 0 for c in record["load"]["classes"].values())
