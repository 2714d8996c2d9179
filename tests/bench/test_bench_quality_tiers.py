"""bench/quality_tiers.py on a few rows: the tier table with QE off and on, the probe checks, the speed table."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import quality, quality_tiers
from bench._common import INT8_MODEL, default_dev_path, heldout_pairs, load_dev, render_table, select_models
from peakgate.config import REPO_MODELS_DIR
from peakgate.quality.settings import QualityConfig

DEV = default_dev_path()
needs_engines = pytest.mark.skipif(
    not DEV.is_file() or shutil.which("apertium") is None
    or not (REPO_MODELS_DIR / "student-en-es-int8" / "model.bin").is_file(),
    reason="needs the dev set, apertium eng-spa and the int8 student",
)


def test_the_probe_set_is_fifty_everyday_rows_with_references() -> None:
    rows = load_dev(quality.PROBE)
    assert len(rows) == 50 and len({r.en for r in rows}) == 50
    assert {r.catalog for r in rows} == {"greeting", "question", "label", "sentence"}
    probe = quality_tiers.EvalSet.of(rows)
    assert all(len(s.split()) <= quality_tiers.SHORT_WORDS for s in probe.short().sources)
    assert len(probe.short().sources) >= 20


def test_unguarded_turns_every_guard_off() -> None:
    [student] = select_models("en", "es", [INT8_MODEL])
    plain = quality_tiers.unguarded(student)
    assert (plain.max_decoding_length_ratio, plain.no_repeat_ngram_size, plain.repetition_penalty,
            plain.length_group_size) == (None, 0, 1.0, 0)


def test_heldout_pairs_skip_format_strings_and_the_excluded_ones() -> None:
    catalog = Path("/usr/share/locale/es/LC_MESSAGES/apt.mo")
    if not catalog.is_file():
        pytest.skip("the Spanish apt catalog is not installed")
    rows = heldout_pairs(["apt.mo"], 30)
    assert len(rows) == 30 and all("%" not in r.en and r.en != r.es for r in rows)
    assert heldout_pairs(["apt.mo"], 30) == rows  # deterministic
    assert not {r.en for r in heldout_pairs(["apt.mo"], 30, exclude=[rows[0].en])} & {rows[0].en}


@needs_engines
async def test_tier_rows_with_qe_off_and_on() -> None:
    configs = select_models("en", "es", ["apertium-en-es", INT8_MODEL])
    dev = quality_tiers.EvalSet.of(load_dev(DEV, limit=6))
    probe = quality_tiers.EvalSet.of([r for r in load_dev(quality.PROBE) if r.catalog == "greeting"][:6])
    rows = await quality_tiers.tier_rows(configs, dev, probe, config=QualityConfig(), batch_size=4,
                                         score=quality.score)
    by = {(r.tier, r.qe): r for r in rows}
    assert set(by) == {(t, qe) for t in ("tiny", "medium", "large") for qe in (False, True)}
    assert by[("medium", True)].chain == (INT8_MODEL, "apertium-en-es")
    assert by[("medium", False)].identical > 0 and by[("medium", True)].identical == 0  # "Hello" -> "Hello"
    assert by[("medium", True)].probe[0] > by[("medium", False)].probe[0]
    assert "medium" in render_table(quality_tiers.TIER_HEADERS, [r.cells() for r in rows])
    speed = await quality_tiers.speed_rows([c for c in configs if c.name == INT8_MODEL], dev, 1, 4)
    assert (speed[0].guards, speed[0].ratio) == (False, 1.0) and all(r.sent_per_s > 0 for r in speed)
