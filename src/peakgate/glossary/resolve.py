"""What translate needs from a `glossary_id`: the tenant's glossary, checked against the request's pair.

Glossaries are immutable (DeepL's rule too), so a compiled `TermMatcher` can be cached by id for good;
ownership and existence are still asked of the store on every request, so a deleted glossary stops applying.
"""

from __future__ import annotations

from collections import OrderedDict

from peakgate.errors import BadRequest
from peakgate.glossary.protect import TermMatcher
from peakgate.glossary.store import GlossaryStore


class GlossaryMismatch(BadRequest):
    code = "glossary_mismatch"


class GlossaryResolver:
    def __init__(self, store: GlossaryStore, *, cache_size: int = 256) -> None:
        self._store = store
        self._size = cache_size
        self._matchers: OrderedDict[str, TermMatcher] = OrderedDict()

    def matcher(self, tenant: str, glossary_id: str, source: str | None, target: str) -> TermMatcher:
        """Raises `GlossaryNotFound`, or `GlossaryMismatch` when the request's languages differ from it."""
        glossary = self._store.get(tenant, glossary_id)
        if source is None:
            raise GlossaryMismatch("source_lang is required when a glossary is used")
        if (source, target) != (glossary.source_lang, glossary.target_lang):
            raise GlossaryMismatch(f"glossary {glossary_id!r} is for {glossary.source_lang}→{glossary.target_lang}, "
                                   f"not {source}→{target}")
        cached = self._matchers.get(glossary_id)
        if cached is not None:
            self._matchers.move_to_end(glossary_id)
            return cached
        built = TermMatcher(self._store.entries(tenant, glossary_id))
        self._matchers[glossary_id] = built
        if len(self._matchers) > self._size:
            self._matchers.popitem(last=False)
        return built
