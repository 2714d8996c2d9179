"""PII de-identification: placeholders in, original values back out after translation."""

from peakgate.redaction.detectors import Detector, Match, build_detector, iban_ok, luhn_ok
from peakgate.redaction.placeholders import Substituted, first_free_number, placeholder, restore, substitute
from peakgate.redaction.policy import RedactionPolicy, TenantRedactors, build_redactors
from peakgate.redaction.redactor import Redacted, RedactedSpan, Redactor
from peakgate.redaction.settings import ALL_KINDS, PiiKind, RedactionConfig

__all__ = [
    "ALL_KINDS", "Detector", "Match", "PiiKind", "Redacted", "RedactedSpan", "RedactionConfig", "RedactionPolicy",
    "Redactor", "Substituted", "TenantRedactors", "build_detector", "build_redactors", "first_free_number",
    "iban_ok", "luhn_ok", "placeholder", "restore", "substitute",
]
