"""What translate needs from a `glossary_id`: the tenant's glossary's dictionary for the request's pair.

A compiled `TermMatcher` is cached by (id, pair, revision): a dictionary's revision changes with every write
(v3 PATCH / PUT), so an edited dictionary is compiled afresh; ownership and existence are still asked of the
store on every request, so a deleted glossary stops applying.
"""

from __future__ import annotations

from collections import OrderedDict

from peakgate.errors import BadRequest
from peakgate.glossary.protect import TermMatcher
from peakgate.glossary.store import GlossaryStore

_Key = tuple[str, str, str, int]


class GlossaryMismatch(BadRequest):
    code = "glossary_mismatch"


class GlossaryResolver:
    def __init__(self, store: GlossaryStore, *, cache_size: int = 256) -> None:
        self._store = store
        self._size = cache_size
        self._matchers: OrderedDict[_Key, TermMatcher] = OrderedDict()

    def matcher(self, tenant: str, glossary_id: str, source: str | None, target: str) -> TermMatcher:
        """Raises `GlossaryNotFound`, or `GlossaryMismatch` when the glossary has no dictionary for the pair."""
        glossary = self._store.get(tenant, glossary_id)
        if source is None:
            raise GlossaryMismatch("source_lang is required when a glossary is used")
        dictionary = glossary.dictionary(source, target)
        if dictionary is None:
            pairs = ", ".join(f"{d.source_lang}→{d.target_lang}" for d in glossary.dictionaries) or "no pair"
            raise GlossaryMismatch(f"glossary {glossary_id!r} is for {pairs}, not {source}→{target}")
        key = (glossary_id, source, target, dictionary.revision)
        cached = self._matchers.get(key)
        if cached is not None:
            self._matchers.move_to_end(key)
            return cached
        built = TermMatcher(self._store.entries(tenant, glossary_id, source, target))
        self._matchers[key] = built
        if len(self._matchers) > self._size:
            self._matchers.popitem(last=False)
        return built
