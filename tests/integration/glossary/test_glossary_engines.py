"""Glossary enforcement around the REAL engines (Apertium eng-spa, the shipped int8 student), after PII redaction.

The order is the one translate uses: redact PII → protect glossary terms → engine → restore terms → restore PII.
"""

from __future__ import annotations

from real_engines import Engine

from peakgate.backends.base import DecodeOptions
from peakgate.glossary import Entry, TermMatcher, restore_terms
from peakgate.redaction import RedactionConfig, Redactor, restore

OPTS = DecodeOptions(beam_size=1, max_decoding_length=256)
GLOSSARY = TermMatcher([Entry("server", "servidor central"), Entry("account", "cuenta de usuario")])
SENTENCES = (
    "The server is down again.",
    "Please restart the server and check your account.",
    "Server logs are stored for every account.",
    "Your account on the server admin@example.com was locked.",
    "Send the server report to ops@example.com or call +34 612 345 678.",
    "My account number is on the server.",
)



async def test_target_terms_and_pii_appear_in_real_engine_output(engine: Engine) -> None:
    redactor = Redactor.from_config(RedactionConfig(enabled=True))
    redacted = [redactor.redact(s) for s in SENTENCES]
    protected = [GLOSSARY.protect(r.text) for r in redacted]
    for r, p in zip(redacted, protected, strict=True):
        assert "server" not in p.text.lower() and "account" not in p.text.lower(), p.text
        assert set(p.mapping).isdisjoint(r.mapping), (r.text, p.text)
    outputs = await engine.translate_batch([p.text for p in protected], "en", "es", OPTS)
    for source, r, p, out in zip(SENTENCES, redacted, protected, outputs, strict=True):
        final = restore(restore_terms(out, p), r.mapping)
        lowered = final.lower()
        if "server" in source.lower():
            assert "servidor central" in lowered, (out, final)
        if "account" in source.lower():
            assert "cuenta de usuario" in lowered, (out, final)
        for value in r.mapping.values():
            assert value in final, (out, final)
        assert "[P" not in final, final
