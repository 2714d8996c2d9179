"""A short `peakgate soak` on a gateway it starts itself: samples at the set interval, real figures for the
gateway and its Apertium children, a report, and an honest INCONCLUSIVE for a run this short."""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
from pathlib import Path

from drill_needs import DRILL_ENGINES

pytestmark = DRILL_ENGINES
DURATION_S = 15


def test_a_short_soak_samples_and_reports(tmp_path: Path) -> None:
    out = tmp_path / "soak"
    done = subprocess.run([sys.executable, "-m", "peakgate.cli", "soak", "--duration", str(DURATION_S),
                           "--rps", "4", "--sample-s", "1", "--drain-s", "5", "--out", str(out)],
                          capture_output=True, text=True, timeout=90, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (data_path,) = out.glob("soak-*.json")
    assert {p.suffix for p in out.iterdir()} == {".json", ".md", ".png"}
    data = json.loads(data_path.read_text())
    points = data["points"]
    assert len(points) >= DURATION_S - 2  # one a second while the load ran
    assert all(b["t_s"] > a["t_s"] for a, b in itertools.pairwise(points))
    for p in points:
        assert p["rss_bytes"] > 50e6 and p["open_fds"] > 0 and p["cpu_s"] > 0
        assert p["engine_rss_bytes"] > 1e6 and p["tree_fds"] > p["open_fds"]  # the pipelines are counted
    assert data["load"]["offered"] > 0.6 * 4 * DURATION_S and data["load"]["accepted"] > 0
    for block in (data["gateway"], data["engines"]):
        assert block["span_s"] < 180 and block["verdict"] == "INCONCLUSIVE"  # too short to judge 8 hours
        assert math.isfinite(block["rss_mb"]["slope_per_h"]) and math.isfinite(block["open_fds"]["slope_per_h"])
    assert data["verdict"] == "INCONCLUSIVE" and "INCONCLUSIVE" in done.stdout
    assert "| gateway RSS |" in (data_path.with_suffix(".md")).read_text()
