"""`peakgate surge` against a served gateway (int8 student, keys per tenant): it stops by itself, writes the
report, every arrival is accounted for, and every 429/503 carried Retry-After.

One tenant's keys get a small character rate, so the run meets refusals (rate limits) even at this low load.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bench._http import serve
from peakgate.config import REPO_MODELS_DIR, default_models
from peakgate.drills.profile import SurgeProfile

pytestmark = pytest.mark.slow

MODEL = "student-en-es-int8"
ARRIVALS_S, DRAIN_S = 7.0, 15.0
PROFILE = """\
name = "mini-3x"
baseline_rps = 20
multiplier = 3.0
[phases]
baseline_s = 1
ramp_s = 2
hold_s = 3
decay_s = 1
[timeouts]
poll_interval_s = 0.5
"""


def _config(data_dir: Path) -> dict[str, object]:
    model = next(m for m in default_models() if m.name == MODEL)
    keys = [{"key": key, "tenant": t.name, "rate_chars_per_s": 300.0 if t.name == "travel-c" else 1e6,
             "burst_chars": 600.0 if t.name == "travel-c" else 1e6}
            for t in SurgeProfile().tenants for key in t.keys]
    return {"models": [model.model_dump(mode="json")], "tiers": {"medium": [MODEL]}, "default_tier": "medium",
            "log_level": "warning", "data_dir": str(data_dir), "keys": keys}


def test_a_short_surge_against_a_served_gateway(tmp_path: Path) -> None:
    if not (REPO_MODELS_DIR / MODEL / "model.bin").is_file():
        pytest.skip("the int8 student is not built (peakgate models build)")
    profile = tmp_path / "mini.toml"
    profile.write_text(PROFILE)
    out = tmp_path / "report"
    with serve(_config(tmp_path / "data")) as server:
        started = time.monotonic()
        done = subprocess.run([sys.executable, "-m", "peakgate.cli", "surge", "--target", server.url, "--profile",
                               str(profile), "--out", str(out), "--drain-s", str(DRAIN_S), "--quiet"],
                              capture_output=True, text=True, timeout=120, check=False)
        elapsed = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert elapsed < ARRIVALS_S + DRAIN_S + 20  # start-up and the report included: it stopped by itself
    assert sorted(p.name for p in out.iterdir()) == ["mini-3x-latency.png", "mini-3x-server.png",
                                                     "mini-3x-throughput.png", "mini-3x.json", "mini-3x.md"]
    summary = json.loads((out / "mini-3x.json").read_text())
    assert summary["target"] == server.url
    for f in (summary["total"], *summary["kinds"].values(), *summary["classes"].values()):
        assert f["offered"] == f["accepted"] + f["shed"] + f["errors"] + f["generator_dropped"]
    total = summary["total"]
    assert 0.6 * 7 * 20 * 2 < total["offered"] < 1.6 * 7 * 20 * 2  # ~280 expected
    assert all(summary["kinds"][k]["accepted"] > 0 for k in ("short", "long", "repeated", "document", "batch"))
    assert summary["refusals"]["total"] > 0
    assert summary["refusals"]["without_retry_after"] == 0 and summary["checks"]["all_refusals_had_retry_after"]
    assert summary["jobs"]["document"]["done"] + summary["jobs"]["batch"]["done"] > 0
    assert summary["server"]["samples"] >= 5 and summary["server"]["segments_served"] > 0
    assert summary["total"]["shed_429"] > 0 and summary["server"]["rejected_by_reason"]  # rate limits
