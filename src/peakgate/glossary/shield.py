"""The whole wrap around an engine call, in the one safe order, for translate to use per segment.

redact PII → protect glossary terms → (cache lookup / engine on `Shielded.text`) → restore terms → restore PII.
Terms are restored first because their placeholders were numbered after the PII ones and the PII restore
must see only its own tokens; both passes leave unknown tokens alone, so the order is also what keeps the
user's own "[P9]" text intact. Cache and log only `Shielded.text` and the engine's raw output, never the
restored text: that is where PII comes back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from peakgate.glossary.protect import TermMatcher
from peakgate.redaction.placeholders import restore
from peakgate.redaction.redactor import Redactor


@dataclass(frozen=True, slots=True)
class Shielded:
    text: str  # what the engine (and the cache key) sees: no PII, glossary terms as placeholders
    pii: Mapping[str, str] = field(default_factory=dict)
    terms: Mapping[str, str] = field(default_factory=dict)


def shield(text: str, redactor: Redactor | None = None, glossary: TermMatcher | None = None) -> Shielded:
    redacted = redactor.redact(text) if redactor is not None else None
    safe = redacted.text if redacted is not None else text
    protected = glossary.protect(safe) if glossary is not None else None
    return Shielded(protected.text if protected is not None else safe,
                    redacted.mapping if redacted is not None else {},
                    protected.mapping if protected is not None else {})


def unshield(translated: str, shielded: Shielded) -> str:
    return restore(restore(translated, shielded.terms), shielded.pii)
