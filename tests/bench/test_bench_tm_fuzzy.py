"""Smoke test for bench/tm_fuzzy.py: the whole run on a tiny store."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import tm_fuzzy
from bench._common import default_dev_path, load_dev

DEV = default_dev_path()


@pytest.mark.skipif(not DEV.is_file(), reason=f"dev set {DEV} is missing")
def test_tm_fuzzy_bench_runs_on_a_small_store(tmp_path: Path) -> None:
    rows = load_dev(DEV, limit=100)
    assert len(tm_fuzzy.synthesize(rows, 300, seed=3)) == 300
    assert tm_fuzzy.synthesize(rows, 50, seed=3) == tm_fuzzy.synthesize(rows, 50, seed=3)  # deterministic
    result = tm_fuzzy.run(rows, tmp_path, n_entries=2_000, n_queries=50, n_brute=10, seed=3)
    assert result.entries == 2_000 and len(result.lookup_ms) == 50 and len(result.brute_ms) == 10
    assert result.hits > 0 and result.agree <= result.brute_hits
    lines = tm_fuzzy.report(result)
    assert any("p99" in line for line in lines) and any("brute-force" in line for line in lines)


def test_percentile_picks_the_nearest_rank() -> None:
    assert tm_fuzzy.percentile([5.0, 1.0, 3.0, 2.0, 4.0], 50) == 3.0
    assert tm_fuzzy.percentile([1.0, 2.0], 99) == 2.0
