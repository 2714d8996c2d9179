"""Settings: file < environment < overrides, defaults that survive partial config, clear errors."""

from __future__ import annotations

from pathlib import Path

import pytest

from peakgate.config import Settings, default_tiers, load_settings
from peakgate.errors import ConfigError


def test_embedded_default_has_the_shipped_models_and_tier_map() -> None:
    s = load_settings(apertium={"discover": False})  # the installed pairs join it: tests/unit/test_config_apertium.py
    assert {m.name for m in s.models} >= {"apertium-en-es", "student-en-es-int8", "student-en-es-fp32"}
    assert s.tiers == default_tiers() and s.default_tier == "medium"


def test_toml_file_and_partial_class_config_keep_other_defaults(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('port = 9000\n[[keys]]\nkey = "k"\ntenant = "t"\n[classes.interactive]\ndeadline_ms = 900\n')
    s = load_settings(path)
    assert s.port == 9000 and s.keys[0].tenant == "t"
    assert s.classes["interactive"].deadline_ms == 900
    assert s.classes["interactive"].max_queue_wait_ms == 500  # the interactive default, not the generic one
    assert s.classes["document"].beam_size == 2 and s.classes["batch"].smoothing


def test_environment_names_the_config_and_overrides_win(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "p.json"
    path.write_text('{"port": 9001, "host": "127.0.0.2"}')
    monkeypatch.setenv("PEAKGATE_CONFIG", str(path))
    monkeypatch.setenv("PEAKGATE_DATA_DIR", str(tmp_path / "data"))
    s = load_settings(port=9002)
    assert (s.host, s.port, s.data_dir) == ("127.0.0.2", 9002, tmp_path / "data")


@pytest.mark.parametrize(
    ("text", "message"),
    [("port = [", "not valid toml"), ('tiers = {x = ["nope"]}', "unknown models"), ("portt = 1", "portt"),
     ('default_tier = "huge"', "not a tier")],
)
def test_bad_config_is_a_config_error_saying_what(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_settings(path)


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        load_settings(tmp_path / "absent.toml")


def test_settings_are_frozen() -> None:
    with pytest.raises(ValueError, match="frozen"):
        Settings().port = 1  # type: ignore[misc]


def test_store_paths_live_under_the_data_dir_or_in_memory(tmp_path: Path) -> None:
    on_disk = Settings(data_dir=tmp_path)
    assert on_disk.store_path(None, "tm.sqlite3") == tmp_path / "tm.sqlite3"
    assert on_disk.store_path(Path("x/tm.db"), "tm.sqlite3") == tmp_path / "x" / "tm.db"
    assert Settings(data_dir=Path("elsewhere")).store_path(tmp_path / "abs.db", "tm.sqlite3") == tmp_path / "abs.db"
    assert Settings().store_path(None, "tm.sqlite3") is None  # programmatic settings: in memory
