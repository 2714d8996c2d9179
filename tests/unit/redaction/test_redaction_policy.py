"""Per-tenant redaction: a default config, per-tenant overrides, redactors built once."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peakgate.redaction import RedactionConfig, RedactionPolicy, build_redactors

TEXT = "mail jane@example.com or call +34 612 345 678"


def test_default_applies_to_unnamed_tenants_and_overrides_replace_it() -> None:
    policy = RedactionPolicy(
        default=RedactionConfig(enabled=True),
        tenants={"bank": RedactionConfig(enabled=True, kinds=("email",)), "open": RedactionConfig(enabled=False)},
    )
    assert policy.config_for("anyone") == policy.default
    redactors = build_redactors(policy)
    assert redactors.redactor_for("anyone").redact(TEXT).text == "mail [P1] or call [P2]"
    assert redactors.redactor_for("bank").redact(TEXT).text == "mail [P1] or call +34 612 345 678"
    assert redactors.redactor_for("open").redact(TEXT).text == TEXT
    assert redactors.redactor_for("anyone") is redactors.redactor_for("someone-else")


def test_policy_defaults_to_off_and_parses_from_plain_data() -> None:
    assert not build_redactors(RedactionPolicy()).redactor_for("t").enabled
    policy = RedactionPolicy.model_validate({"tenants": {"t": {"enabled": True, "kinds": ["card"]}}})
    assert policy.config_for("t").kinds == ("card",)


def test_unknown_kind_or_field_is_refused() -> None:
    with pytest.raises(ValidationError):
        RedactionPolicy.model_validate({"default": {"enabled": True, "kinds": ["ssn"]}})
    with pytest.raises(ValidationError):
        RedactionPolicy.model_validate({"defaults": {}})
