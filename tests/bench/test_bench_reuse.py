"""Smoke test for bench/reuse.py: the hit path, echo baseline and Zipf replay on the echo engine, tiny sizes."""

from __future__ import annotations

from collections import Counter

import pytest

from bench import reuse
from bench._common import default_dev_path, load_dev

DEV = default_dev_path()


def test_zipf_sample_is_seeded_and_skewed() -> None:
    ranks = reuse.zipf_sample(50, 2_000, 1.1, seed=3)
    assert ranks == reuse.zipf_sample(50, 2_000, 1.1, seed=3)
    assert len(ranks) == 2_000 and all(0 <= r < 50 for r in ranks)
    counts = Counter(ranks)
    assert counts[0] > counts[1] > counts[10]  # the head is far more popular than the tail


@pytest.mark.skipif(not DEV.is_file(), reason=f"dev set {DEV} is missing")
def test_reuse_bench_runs_on_the_echo_engine() -> None:
    phrases = list(dict.fromkeys(r.en for r in load_dev(DEV, limit=40)))
    lines = reuse.run(reuse.ECHO_CONFIG, phrases, clients=4, hit_requests=200, echo_requests=200,
                      replay_requests=200, zipf_s=1.1, seed=1, probe_n=20)
    text = "\n".join(lines)
    assert "cache hits, 4 clients" in text and "requests per server CPU-second" in text
    assert "hit path / echo path" in text
    assert "Zipf(s=1.1) replay: 200 requests" in text and "engine work saved" in text
    assert "cache on / cache off" in text and "errors 0" in text
