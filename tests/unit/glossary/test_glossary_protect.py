"""Glossary protection: longest-first, case-insensitive, whole-word terms; placeholders that never clash."""

from __future__ import annotations

import pytest

from peakgate.glossary import (
    DictionaryEntries,
    Entry,
    GlossaryMismatch,
    GlossaryNotFound,
    GlossaryResolver,
    TermMatcher,
    build_glossary_store,
    protect,
    restore_terms,
)
from peakgate.redaction import RedactionConfig, Redactor, restore

GLOSSARY = (Entry("server", "servidor central"), Entry("account", "cuenta de usuario"),
            Entry("user account", "cuenta personal"), Entry("C++", "C más más"))


def test_longest_term_wins_and_words_must_be_whole() -> None:
    out = protect("Your user account and account; servers and observer stay, the server too.", GLOSSARY)
    assert out.text == "Your [P1] and [P2]; servers and observer stay, the [P3] too."
    assert dict(out.mapping) == {"[P1]": "cuenta personal", "[P2]": "cuenta de usuario", "[P3]": "servidor central"}


def test_case_insensitive_and_sentence_capital_carried_over() -> None:
    out = protect("Server down. SERVER down. server down.", GLOSSARY)
    assert out.text == "[P1] down. [P1] down. [P2] down."  # equal targets share a placeholder
    assert restore_terms("[P1] caído. [P1] caído. [P2] caído.", out) == (
        "Servidor central caído. Servidor central caído. servidor central caído.")


def test_terms_with_symbols_match_as_words() -> None:
    assert protect("I write C++ daily", GLOSSARY).text == "I write [P1] daily"


def test_exact_case_entry_preferred_over_a_case_fold() -> None:
    matcher = TermMatcher([Entry("Apple", "Apple Inc."), Entry("apple", "manzana")])
    out = matcher.protect("apple and Apple")
    assert restore_terms(out.text, out) == "manzana and Apple Inc."


def test_no_terms_or_no_match_leaves_text_alone() -> None:
    assert protect("nothing here", GLOSSARY).text == "nothing here"
    assert protect("server", ()).text == "server"


def test_after_redaction_numbers_do_not_clash_and_placeholders_are_not_matched() -> None:
    redactor = Redactor.from_config(RedactionConfig(enabled=True))
    pii_glossary = (*GLOSSARY, Entry("P1", "never"), Entry("P", "never"))
    source = "Mail admin@example.com about the server account."
    redacted = redactor.redact(source)
    protected = protect(redacted.text, pii_glossary)
    assert protected.text == "Mail [P1] about the [P2] [P3]."
    assert set(protected.mapping).isdisjoint(redacted.mapping)
    engine_output = "Envía a [P1] sobre la [P3] del [P2]."
    restored = restore(restore_terms(engine_output, protected), redacted.mapping)
    assert restored == "Envía a admin@example.com sobre la cuenta de usuario del servidor central."


def test_lost_term_is_appended_not_dropped() -> None:
    out = protect("the server", GLOSSARY)
    assert restore_terms("el", out) == "el servidor central"


def test_resolver_checks_pair_ownership_and_caches_matchers() -> None:
    store = build_glossary_store("memory")
    made = store.create("acme", "G", [DictionaryEntries("en", "es", GLOSSARY)])
    resolver = GlossaryResolver(store, cache_size=1)
    first = resolver.matcher("acme", made.glossary_id, "en", "es")
    assert resolver.matcher("acme", made.glossary_id, "en", "es") is first
    assert first.protect("server").text == "[P1]"
    with pytest.raises(GlossaryMismatch, match="source_lang is required"):
        resolver.matcher("acme", made.glossary_id, None, "es")
    with pytest.raises(GlossaryMismatch, match="en→es, not en→fr"):
        resolver.matcher("acme", made.glossary_id, "en", "fr")
    with pytest.raises(GlossaryNotFound):
        resolver.matcher("other", made.glossary_id, "en", "es")
    other = store.create("acme", "H", [DictionaryEntries("en", "es", GLOSSARY[:1])])
    resolver.matcher("acme", other.glossary_id, "en", "es")  # evicts the first (a cache of one)
    assert resolver.matcher("acme", made.glossary_id, "en", "es") is not first
    again = resolver.matcher("acme", made.glossary_id, "en", "es")
    store.put_dictionary("acme", made.glossary_id, DictionaryEntries("en", "es", [Entry("file", "archivo")]))
    edited = resolver.matcher("acme", made.glossary_id, "en", "es")
    assert edited is not again  # a new revision compiles afresh: an edit applies at once
    assert edited.protect("file").text == "[P1]" and edited.protect("server").text == "server"
    store.delete("acme", made.glossary_id)
    with pytest.raises(GlossaryNotFound):  # a cached matcher never outlives its glossary
        resolver.matcher("acme", made.glossary_id, "en", "es")
    store.close()
