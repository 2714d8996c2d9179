"""`peakgate drill` and `peakgate soak` arguments: bad input is a clear error naming it, before anything starts."""

from __future__ import annotations

from pathlib import Path

import pytest

from peakgate.cli import _parser, main
from peakgate.drills.faults import Fault
from peakgate.drills.soak_cli import soak_profile, worst


def test_drill_defaults_and_faults() -> None:
    args = _parser().parse_args(["drill", "--fault", "kill-pipeline@20s", "--fault", "stall-pipeline@40s:5s"])
    assert args.fault == [Fault("kill-pipeline", 20.0), Fault("stall-pipeline", 40.0, 5.0)]
    assert (args.profile, args.out, args.target, args.engine_match) == ("holiday-5x", Path("docs/drills"), None,
                                                                         "eng-spa")


@pytest.mark.parametrize(("argv", "says"), [
    (["drill"], "--fault"),
    (["drill", "--fault", "explode@3s"], "'explode@3s'"),
    (["drill", "--fault", "kill-pipeline@3s", "--target", "http://127.0.0.1:9", "--config", "c.toml"],
     "not allowed with"),
    (["soak", "--duration", "0"], "'0'"),
    (["soak", "--rps", "-1"], "'-1'"),
])
def test_usage_errors_name_the_bad_argument(argv: list[str], says: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2 and says in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "says"), [
    (["drill", "--fault", "kill-pipeline@90s", "--duration", "60"], "kill-pipeline@90s"),
    (["drill", "--fault", "kill-pipeline@5s", "--target", "http://127.0.0.1:9"], "--pid"),
    (["drill", "--fault", "kill-pipeline@5s", "--pid", "1"], "--pid goes with --target"),
    (["drill", "--fault", "kill-pipeline@5s", "--target", "ftp://x", "--pid", "1"], "--target 'ftp://x'"),
    (["soak", "--target", "http://127.0.0.1:9/v2"], "origin only"),
    (["drill", "--fault", "kill-worker@5s"], "at least two workers"),
    (["drill", "--fault", "kill-worker@5s", "--workers", "1"], "at least two workers"),
    (["drill", "--fault", "stop-redis@5s:2s"], "scale-out deployment"),
    (["drill", "--fault", "kill-pipeline@5s", "--redis-pid", "1"], "go with --target"),
    (["drill", "--fault", "kill-pipeline@5s", "--workers", "2", "--config", "c.toml"], "not with --target"),
    (["drill", "--fault", "kill-pipeline@5s", "--workers", "99"], "between 0 and 8"),
    (["drill", "--fault", "fail-upstream@5s:2s", "--target", "http://127.0.0.1:9", "--pid", "1"],
     "fail-upstream fails the drill's own upstream"),
    (["drill", "--fault", "fail-upstream@5s:2s", "--config", "c.toml"], "not with --target, --config"),
    (["drill", "--fault", "fail-upstream@5s:2s", "--workers", "2"], "or --workers"),
])
def test_config_errors_exit_2_before_anything_runs(argv: list[str], says: str, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main([*argv, "--out", str(out)]) == 2
    assert says in capsys.readouterr().err
    assert not out.exists()


def test_a_bad_profile_field_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("baseline_rsp = 3\n")
    assert main(["drill", "--fault", "kill-pipeline@5s", "--profile", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "baseline_rsp" in capsys.readouterr().err


def test_soak_profile_is_flat() -> None:
    profile = soak_profile(7.0, 300.0)
    assert profile.phases.total_s == 300.0
    assert {profile.rate_at(t) for t in (0.0, 150.0, 299.9)} == {7.0} and profile.rate_at(300.0) == 0.0


def test_soak_verdict_is_the_worst_of_the_blocks_with_samples() -> None:
    def block(verdict: str, samples: int = 30) -> dict[str, object]:
        return {"verdict": verdict, "samples": samples}

    assert worst({"gateway": block("PASS"), "engines": block("PASS")}) == "PASS"
    assert worst({"gateway": block("PASS"), "engines": block("FAIL")}) == "FAIL"
    assert worst({"gateway": block("PASS"), "engines": block("INCONCLUSIVE")}) == "INCONCLUSIVE"
    assert worst({"gateway": block("PASS"), "engines": block("INCONCLUSIVE", samples=0)}) == "PASS"
