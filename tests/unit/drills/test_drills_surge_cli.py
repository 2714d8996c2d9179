"""`peakgate surge` arguments: overrides, and bad input refused before anything is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from peakgate.cli import _parser, main
from peakgate.drills.surge_cli import prepare


def test_duration_and_baseline_overrides() -> None:
    args = _parser().parse_args(["surge", "--target", "http://127.0.0.1:1", "--profile", "holiday-5x",
                                 "--duration", "1.5m", "--baseline-rps", "7"])
    profile = prepare(args)
    assert profile.phases.total_s == pytest.approx(90) and profile.baseline_rps == 7 and profile.peak_rps == 35
    assert prepare(_parser().parse_args(["surge", "--target", "http://h"])).name == "holiday-10x"


def test_a_bad_profile_field_is_named_and_nothing_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("[phases]\nhodl_s = 10\n")
    assert main(["surge", "--target", "http://127.0.0.1:9", "--profile", str(bad), "--out", str(tmp_path / "r")]) == 2
    assert "phases.hodl_s" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_a_bad_target_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["surge", "--target", "127.0.0.1:8080/v2", "--out", str(tmp_path / "r")]) == 2
    assert "--target" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()
