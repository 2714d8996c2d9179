"""Smoke test for bench/: the quality and engines code paths on a handful of dev rows, and the gate logic."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import engines, quality
from bench._common import FP32_MODEL, INT8_MODEL, default_dev_path, load_dev, render_table, select_models
from peakgate.config import REPO_MODELS_DIR

DEV = default_dev_path()
N = 5
needs_dev = pytest.mark.skipif(not DEV.is_file(), reason=f"dev set {DEV} is missing")
needs_apertium = pytest.mark.skipif(
    shutil.which("apertium") is None or not Path("/usr/share/apertium/modes/eng-spa.mode").is_file(),
    reason="apertium eng-spa is not installed",
)
needs_int8 = pytest.mark.skipif(
    not (REPO_MODELS_DIR / "student-en-es-int8" / "model.bin").is_file(), reason="the int8 student is not built"
)


def test_gate_passes_within_one_chrf_and_fails_beyond() -> None:
    ok = quality.gate({INT8_MODEL: {1: 54.2, 4: 55.9}, FP32_MODEL: {1: 55.0, 4: 55.8}})
    assert ok.passed and len(ok.lines) == 2
    bad = quality.gate({INT8_MODEL: {1: 54.9, 4: 54.7}, FP32_MODEL: {1: 54.8, 4: 55.8}})
    assert not bad.passed
    assert any("beam 4" in line and "FAIL" in line for line in bad.lines)
    assert quality.gate({INT8_MODEL: {1: 53.8}, FP32_MODEL: {1: 54.8}}).passed  # exactly -1.0 is allowed


def test_gate_fails_when_a_student_is_missing_or_beams_do_not_overlap() -> None:
    assert not quality.gate({INT8_MODEL: {1: 60.0}}).passed
    assert not quality.gate({INT8_MODEL: {1: 60.0}, FP32_MODEL: {4: 50.0}}).passed


def test_gate_all_checks_every_student_and_names_the_failing_one() -> None:
    def row(model: str, chrf: float) -> quality.QualityRow:
        return quality.QualityRow(model, "ctranslate2", "int8", 1, chrf, 20.0, 1.0, 10)

    students = [(INT8_MODEL, FP32_MODEL), ("large-int8", "large-fp32")]
    rows = [row(INT8_MODEL, 55.0), row(FP32_MODEL, 55.2), row("large-int8", 58.0), row("large-fp32", 60.0)]
    result = quality.gate_all(rows, students)
    assert not result.passed
    assert [line.split(":")[1].strip() for line in result.lines if "FAIL" in line] == ["large-int8"]
    assert quality.gate_all([*rows[:3], row("large-fp32", 58.5)], students).passed


def test_render_table_aligns_columns() -> None:
    table = render_table(("model", "chrF"), [("a", 1.5), ("longer-name", 56.25)])
    lines = table.splitlines()
    assert lines[0].startswith("model") and set(lines[1]) <= {"-", " "}
    assert lines[2].endswith(" 1.50") and lines[3].endswith("56.25")
    assert len({len(line) for line in lines}) == 1


def test_paired_ratio_is_the_median_of_round_ratios() -> None:
    assert engines.paired_ratio([200.0, 300.0, 100.0], [100.0, 100.0, 100.0]) == 2.0


@needs_dev
def test_load_dev_reads_three_columns() -> None:
    rows = load_dev(DEV, limit=N)
    assert len(rows) == N and all(r.catalog.endswith(".mo") and r.en and r.es for r in rows)


@needs_dev
@needs_apertium
@needs_int8
async def test_quality_and_engines_paths_on_a_few_rows(tmp_path: Path) -> None:
    rows = load_dev(DEV, limit=N)
    src, refs = [r.en for r in rows], [r.es for r in rows]
    configs = {c.name: c for c in select_models("en", "es", ["apertium-en-es", INT8_MODEL])}

    ap_rows, ap_hyps = await quality.measure(configs["apertium-en-es"], src, refs, [1, 4])
    int8_rows, _ = await quality.measure(configs[INT8_MODEL], src, refs, [1])
    assert [r.beam for r in ap_rows] == [None] and [r.beam for r in int8_rows] == [1]
    table = render_table(quality.HEADERS, [r.cells() for r in [*ap_rows, *int8_rows]])
    assert "apertium-en-es" in table and INT8_MODEL in table and "chrF" in table
    assert all(0.0 <= r.chrf <= 100.0 for r in [*ap_rows, *int8_rows])

    cli = quality.compare_cli(src, ap_hyps[None], await quality.apertium_cli(src, "eng-spa"), refs)
    assert cli.passed, cli.diffs
    assert cli.line().startswith(f"apertium backend == CLI: {N}/{N}, chrF")

    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"name": "x", "variants": {"int8": "y"}}, indent=2))
    result = quality.gate(quality.chrf_by_model(int8_rows))
    quality.write_manifest(manifest, quality.manifest_scores(int8_rows, DEV, N, ["libc.mo"],
                                                             gate_result=result, batch_size=32, cli=cli))
    data = json.loads(manifest.read_text())
    assert data["name"] == "x" and data["variants"] == {"int8": "y"}
    assert data["scores"]["models"][INT8_MODEL]["beam1"]["chrf"] == round(int8_rows[0].chrf, 2)

    cells = await engines.bench([configs["apertium-en-es"], configs[INT8_MODEL]],
                                [(r.en, r.es) for r in rows], n=8, rounds=1, batch_sizes=[1, 8])
    assert set(cells) == {(name, bs) for name in configs for bs in (1, 8)}
    assert all(c.median > 0 for c in cells.values())
    assert INT8_MODEL in engines.throughput_table(list(configs.values()), cells, [1, 8])
