"""Store keys: configured, from a key file, or generated once (0600) under the data dir; values bound to their row."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import pytest

from peakgate.atrest import AtRestConfig, Sealer, StoreKeyError, open_sealer
from peakgate.config import load_settings
from peakgate.errors import ConfigError


def _same_key(a: Sealer, b: Sealer) -> bool:
    try:
        return b.open(a.seal(b"probe", b"ctx"), b"ctx") == b"probe"
    except StoreKeyError:
        return False


def test_a_key_is_generated_once_private_and_reused(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="peakgate.atrest.keys"):
        first = open_sealer(AtRestConfig(), tmp_path / "data")
    key_file = tmp_path / "data" / "store.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert "created the store key" in caplog.text and str(key_file) in caplog.text
    assert [p.name for p in key_file.parent.iterdir()] == ["store.key"]  # no draft left behind
    assert _same_key(first, open_sealer(AtRestConfig(), tmp_path / "data"))


def test_a_configured_key_wins_and_a_key_file_must_exist(tmp_path: Path) -> None:
    text = Sealer.new_key_text()
    (tmp_path / "mine.key").write_text(text + "\n")
    configured = open_sealer(AtRestConfig(key=text), tmp_path)
    assert _same_key(configured, open_sealer(AtRestConfig(key_file=Path("mine.key")), tmp_path))
    assert not (tmp_path / "store.key").exists()
    with pytest.raises(ConfigError, match="cannot read the store key file"):
        open_sealer(AtRestConfig(key_file=Path("missing.key")), tmp_path)


def test_without_a_data_dir_the_key_lives_with_the_process() -> None:
    assert not _same_key(open_sealer(AtRestConfig(), None), open_sealer(AtRestConfig(), None))


def test_the_environment_sets_the_key_and_a_malformed_one_is_a_config_error(monkeypatch: pytest.MonkeyPatch,
                                                                             tmp_path: Path) -> None:
    text = Sealer.new_key_text()
    monkeypatch.setenv("PEAKGATE_STORE_KEY", text)
    settings = load_settings(None, data_dir=tmp_path)
    assert settings.at_rest.key is not None and settings.at_rest.key.get_secret_value() == text
    assert text not in repr(settings)  # a secret, never printed
    monkeypatch.setenv("PEAKGATE_STORE_KEY", "too-short")
    with pytest.raises(ConfigError, match="store key"):
        load_settings(None, data_dir=tmp_path)


def test_a_sealed_value_opens_only_in_its_own_context_and_untouched() -> None:
    sealer = Sealer.ephemeral()
    sealed = sealer.seal_text("alice@example.com", b"job-1")
    assert b"alice" not in sealed and sealer.open_text(sealed, b"job-1") == "alice@example.com"
    with pytest.raises(StoreKeyError):
        sealer.open(sealed, b"job-2")  # copied into another job's row
    with pytest.raises(StoreKeyError):
        sealer.open(sealed[:-1] + bytes([sealed[-1] ^ 1]), b"job-1")
    with pytest.raises(StoreKeyError):
        sealer.open(b"plain text", b"job-1")
