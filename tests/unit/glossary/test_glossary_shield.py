"""shield/unshield: PII redaction then glossary protection, undone in reverse, each optional."""

from __future__ import annotations

from peakgate.glossary import Entry, TermMatcher, shield, unshield
from peakgate.redaction import RedactionConfig, Redactor

REDACTOR = Redactor.from_config(RedactionConfig(enabled=True))
GLOSSARY = TermMatcher([Entry("server", "servidor central")])


def test_full_wrap_round_trip_keeps_user_placeholder_text() -> None:
    s = shield("Literal [P1]: mail admin@example.com about the server.", REDACTOR, GLOSSARY)
    assert s.text == "Literal [P1]: mail [P2] about the [P3]."
    assert "admin@example.com" not in s.text
    assert unshield("Literal [P1]: escribe a [P2] sobre el [P3].", s) == (
        "Literal [P1]: escribe a admin@example.com sobre el servidor central.")


def test_each_pass_is_optional() -> None:
    assert shield("the server", None, None).text == "the server"
    only_terms = shield("mail a@example.com on the server", None, GLOSSARY)
    assert only_terms.text == "mail a@example.com on the [P1]" and not only_terms.pii
    only_pii = shield("mail a@example.com on the server", REDACTOR)
    assert only_pii.text == "mail [P1] on the server" and not only_pii.terms
    assert unshield("escribe a [P1]", only_pii) == "escribe a a@example.com"
