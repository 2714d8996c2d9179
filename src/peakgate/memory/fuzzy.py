"""In-memory fuzzy index: word-token inverted lists per scope, prefix-filtered candidates, rapidfuzz scoring.

A lookup never scans the scope. Query tokens are taken rarest first; a source sharing at least `min_share` of
the query's tokens must contain one of the first `n - k + 1` of them (prefix filtering), so only those posting
lists are counted, and at most `postings_budget` ids in all, which bounds the worst case (a query made only of
very common words) at the price of recall there. The best-overlapping `max_candidates` ids are scored with
`rapidfuzz.fuzz.ratio` on case-folded text (its score_cutoff applies the Indel length bound in C). Candidates
are word based: a near-duplicate whose every word carries a typo is missed — fine for a TM, where edits are
whole words.
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from dataclasses import dataclass, field

from rapidfuzz import fuzz, process

from peakgate.memory.store import Scope
from peakgate.memory.text import fold, word_tokens


@dataclass(slots=True)
class _ScopeIndex:
    # arrays and a str-valued dict are invisible to the cyclic GC: 100k entries add no gen-2 pause to lookups
    postings: dict[str, array[int]] = field(default_factory=dict)
    docs: dict[int, str] = field(default_factory=dict)  # id -> folded source


class FuzzyIndex:
    """Doc ids are the store's row ids; the store keeps this index in step with what it commits."""

    def __init__(self, *, max_candidates: int = 1_500, min_share: float = 0.5,
                 postings_budget: int | None = None) -> None:
        self._max_candidates = max_candidates
        self._min_share = min_share
        # budget == max_candidates by default: every counted id is scored, and no Python-level ranking runs
        self._budget = max_candidates if postings_budget is None else postings_budget
        self._scopes: dict[Scope, _ScopeIndex] = {}

    def __len__(self) -> int:
        return sum(len(s.docs) for s in self._scopes.values())

    def add(self, scope: Scope, doc_id: int, source: str) -> None:
        index = self._scopes.setdefault(scope, _ScopeIndex())
        if doc_id in index.docs:
            self._unlink(index, doc_id)
        text = fold(source)
        index.docs[doc_id] = text
        postings = index.postings
        for token in word_tokens(text):
            ids = postings.get(token)
            if ids is None:
                postings[token] = array("q", (doc_id,))
            else:
                ids.append(doc_id)

    def remove(self, scope: Scope, doc_id: int) -> None:
        index = self._scopes.get(scope)
        if index is not None and doc_id in index.docs:
            self._unlink(index, doc_id)

    def clear(self) -> None:
        self._scopes.clear()

    def search(self, scope: Scope, query: str, *, threshold: float, limit: int = 1) -> list[tuple[int, float]]:
        """Up to `limit` (doc id, score 0..1) at or above `threshold`, best first."""
        index = self._scopes.get(scope)
        text = fold(query)
        if index is None or not text:
            return []
        counts = self._candidate_counts(index, word_tokens(text))
        docs = index.docs
        # rapidfuzz rejects by length in C, so scoring a few thousand candidates costs less than ranking them here
        ranked = counts if len(counts) <= self._max_candidates else dict(counts.most_common(self._max_candidates))
        choices = {doc_id: docs[doc_id] for doc_id in ranked}
        hits = process.extract(text, choices, scorer=fuzz.ratio, processor=None,
                               score_cutoff=threshold * 100, limit=limit)
        return [(int(doc_id), score / 100) for _, score, doc_id in hits]

    def _candidate_counts(self, index: _ScopeIndex, tokens: frozenset[str]) -> Counter[int]:
        postings = index.postings
        ordered = sorted(tokens, key=lambda t: len(postings.get(t, ())))
        need = max(1, math.ceil(len(ordered) * self._min_share))
        counts: Counter[int] = Counter()
        budget = self._budget
        for token in ordered[: len(ordered) - need + 1]:
            ids = postings.get(token)
            if not ids:
                continue
            if len(ids) > budget:
                if counts:
                    break
                ids = ids[-budget:]  # only common words: a bounded sample (the newest) beats a full scan
            counts.update(ids)
            budget -= len(ids)
            if budget <= 0:
                break
        return counts

    @staticmethod
    def _unlink(index: _ScopeIndex, doc_id: int) -> None:
        for token in word_tokens(index.docs.pop(doc_id)):
            ids = index.postings[token]
            ids.remove(doc_id)  # O(list); deletes are rare next to lookups
            if not ids:
                del index.postings[token]
