"""The report on disk: JSON, Markdown and three small PNGs, named after the profile."""

from __future__ import annotations

import json
import random
from pathlib import Path

from peakgate.drills import report
from peakgate.drills.profile import KINDS, Phases, SurgeProfile
from peakgate.drills.records import FollowUps, Record, RunResult
from peakgate.drills.scrape import Sample
from peakgate.drills.summary import summarize

PROFILE = SurgeProfile(name="holiday-10x", baseline_rps=5, multiplier=10,
                       phases=Phases(baseline_s=5, ramp_s=5, hold_s=10, decay_s=5))


def _result() -> RunResult:
    rng = random.Random(0)
    records = []
    for i in range(400):
        at = rng.uniform(0, 25)
        kind = rng.choice(list(KINDS))
        status = rng.choice((200, 200, 200, 429, 503, 504))
        records.append(Record(i, kind, "interactive", "t", PROFILE.phase_at(at), at, 1, status,
                              rng.uniform(0.01, 4.0), retry_after=status in (429, 503)))
    samples = [Sample(float(t), degradation=float(t // 8), queue=float(t * 3), hits=float(t * 2), served=float(t * 9))
               for t in range(30)]
    return RunResult("http://127.0.0.1:8080", PROFILE.name, 0, "2026-12-05T00:00:00+00:00", 25.0, 5.0, 29.0, 0.02,
                     records, FollowUps(), samples, 0)


def test_written_files(tmp_path: Path) -> None:
    summary = summarize(_result(), PROFILE)
    written = report.write(summary, tmp_path / "out", note="2 cores, a training job at nice 10")
    assert written.summary == tmp_path / "out" / "holiday-10x.json"
    assert json.loads(written.summary.read_text())["total"]["offered"] == 400
    assert [f.name for f in written.figures] == ["holiday-10x-latency.png", "holiday-10x-throughput.png",
                                                 "holiday-10x-server.png"]
    for figure in written.figures:
        assert figure.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and figure.stat().st_size < 150_000
    text = written.markdown.read_text()
    assert "# Surge report: holiday-10x against http://127.0.0.1:8080" in text
    assert "2 cores, a training job at nice 10" in text
    assert "| short (interactive) | " in text and "| hold | 10–20 |" in text
    assert "with `Retry-After`" in text and "all of them" in text
    for figure in written.figures:
        assert f"]({figure.name})" in text


def test_headline_text_names_every_kind() -> None:
    text = report.headline_text(summarize(_result(), PROFILE))
    assert [line.split()[0] for line in text.splitlines()] == [*KINDS, "all", "refusals"]
