"""API keys and open dev mode."""

from __future__ import annotations

import logging

import pytest

from peakgate.admission.keys import KeyRing
from peakgate.config import KeyConfig
from peakgate.domain import Principal
from peakgate.errors import ConfigError, Unauthorized

KEYS = (
    KeyConfig(key="k-acme", tenant="acme"),
    KeyConfig(key="k-bulk", tenant="bulkco", priority_class="batch"),
)


def test_known_key_resolves_to_its_tenant_and_class() -> None:
    ring = KeyRing(KEYS)
    assert ring.authenticate("k-bulk") == Principal(key="k-bulk", tenant="bulkco", priority="batch")
    assert ring.authenticate("k-acme").priority == "interactive"


@pytest.mark.parametrize("key", [None, ""])
def test_missing_key_is_unauthorized(key: str | None) -> None:
    with pytest.raises(Unauthorized, match="missing API key"):
        KeyRing(KEYS).authenticate(key)


def test_unknown_key_is_unauthorized() -> None:
    with pytest.raises(Unauthorized, match="unknown API key"):
        KeyRing(KEYS).authenticate("k-nope")


def test_open_mode_is_anonymous_and_warns_once(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="peakgate.admission.keys"):
        ring = KeyRing(())
        for key in (None, "anything", ""):
            assert ring.authenticate(key) == Principal(key=None, tenant="anonymous", priority="interactive")
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert "open dev mode" in warnings[0].getMessage()
    assert ring.open_mode


def test_configured_keys_do_not_warn(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        KeyRing(KEYS)
    assert not caplog.records


def test_duplicate_key_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="twice"):
        KeyRing((KeyConfig(key="k", tenant="a"), KeyConfig(key="k", tenant="b")))
