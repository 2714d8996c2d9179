"""Surge profiles: the built-ins, files, and errors that name the wrong field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from peakgate.drills.profile import BUILTIN, Phases, SurgeProfile, load_profile
from peakgate.errors import ConfigError


def test_builtins_differ_only_in_peak_height() -> None:
    five, ten = load_profile("holiday-5x"), load_profile("holiday-10x")
    assert (five.multiplier, ten.multiplier) == (5.0, 10.0)
    assert five.model_dump(exclude={"name", "multiplier"}) == ten.model_dump(exclude={"name", "multiplier"})
    assert ten.peak_rps == ten.baseline_rps * 10
    assert set(BUILTIN) == {"holiday-5x", "holiday-10x"}


def test_rate_follows_the_phases() -> None:
    p = SurgeProfile(baseline_rps=10, multiplier=5, phases=Phases(baseline_s=10, ramp_s=10, hold_s=10, decay_s=10))
    assert p.rate_at(5) == 10
    assert p.rate_at(15) == pytest.approx(30)  # halfway up the ramp
    assert p.rate_at(25) == 50
    assert p.rate_at(35) == pytest.approx(30)  # halfway down
    assert p.rate_at(40) == 0 and p.rate_at(-1) == 0
    assert [p.phase_at(t) for t in (0, 10, 20, 30)] == ["baseline", "ramp", "hold", "decay"]


def test_duration_scales_every_phase() -> None:
    p = SurgeProfile(phases=Phases(baseline_s=10, ramp_s=10, hold_s=20, decay_s=0)).with_duration(8)
    assert p.phases == Phases(baseline_s=2, ramp_s=2, hold_s=4, decay_s=0)


def test_toml_and_json_files_load(tmp_path: Path) -> None:
    toml = tmp_path / "peak.toml"
    toml.write_text('multiplier = 3.0\nbaseline_rps = 5\n[phases]\nhold_s = 4\n[mix]\nbatch = 0\n')
    p = load_profile(str(toml))
    assert (p.name, p.peak_rps, p.phases.hold_s, p.mix.batch) == ("peak", 15.0, 4.0, 0.0)
    data = tmp_path / "other.json"
    data.write_text(json.dumps({"name": "mine", "tenants": [{"name": "t", "keys": ["k"]}]}))
    assert load_profile(str(data)).tenants[0].name == "t"


@pytest.mark.parametrize(("text", "field"), [
    ("[mix]\nshrot = 1\n", "mix.shrot"),
    ("baseline_rps = -1\n", "baseline_rps"),
    ("multiplier = 0.5\n", "multiplier"),
    ("burst = 3\n", "burst"),
    ("[phases]\nbaseline_s = 0\nramp_s = 0\nhold_s = 0\ndecay_s = 0\n", "phases"),
    ("[sizes]\nbatch_segments = [5, 2]\n", "batch_segments"),
    ("[[tenants]]\nname = \"a\"\nkeys = []\n", "tenants.0.keys"),
    ("[mix]\nshort = 0\nlong = 0\nrepeated = 0\ndocument = 0\nbatch = 0\n", "mix"),
])
def test_a_wrong_field_is_an_error_naming_it(tmp_path: Path, text: str, field: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_profile(str(path))
    assert field in caught.value.message and str(path) in caught.value.message


def test_unreadable_or_unknown_profiles_are_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="neither a built-in"):
        load_profile("holiday-20x")
    broken = tmp_path / "broken.toml"
    broken.write_text("multiplier = ")
    with pytest.raises(ConfigError, match="not valid toml"):
        load_profile(str(broken))
    listed = tmp_path / "list.json"
    listed.write_text("[1, 2]")
    with pytest.raises(ConfigError, match="expected a table"):
        load_profile(str(listed))
