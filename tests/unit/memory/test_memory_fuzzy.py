from __future__ import annotations

from memory_fakes import dev_pairs, needs_dev

from peakgate.memory.fuzzy import FuzzyIndex
from peakgate.memory.store import Scope

EN_ES = Scope("", "en", "es")
ACME = Scope("acme", "en", "es")


def test_finds_a_near_duplicate_and_scores_it_0_to_1() -> None:
    index = FuzzyIndex()
    index.add(EN_ES, 1, "The file could not be opened")
    index.add(EN_ES, 2, "Authentication is required")
    hits = index.search(EN_ES, "The file could not be saved", threshold=0.75)
    assert [doc for doc, _ in hits] == [1]
    assert 0.75 <= hits[0][1] < 1.0


def test_case_and_spacing_do_not_cost_similarity() -> None:
    index = FuzzyIndex()
    index.add(EN_ES, 1, "Save the File")
    assert index.search(EN_ES, "  save   the file ", threshold=0.99) == [(1, 1.0)]


def test_threshold_cuts_and_limit_orders_best_first() -> None:
    index = FuzzyIndex()
    index.add(EN_ES, 1, "Cannot open the file")
    index.add(EN_ES, 2, "Cannot open the big file")
    index.add(EN_ES, 3, "Totally unrelated message here")
    hits = index.search(EN_ES, "Cannot open the file now", threshold=0.5, limit=5)
    assert [doc for doc, _ in hits][:2] in ([1, 2], [2, 1])
    assert hits == sorted(hits, key=lambda h: -h[1]) and 3 not in {d for d, _ in hits}
    assert index.search(EN_ES, "zzz qqq", threshold=0.5) == []


def test_scopes_are_isolated() -> None:
    index = FuzzyIndex()
    index.add(ACME, 1, "Printer is out of paper")
    assert index.search(EN_ES, "Printer is out of paper", threshold=0.5) == []
    assert index.search(Scope("acme", "en", "fr"), "Printer is out of paper", threshold=0.5) == []
    assert index.search(ACME, "Printer is out of ink", threshold=0.5)[0][0] == 1


def test_remove_and_readd_keep_postings_consistent() -> None:
    index = FuzzyIndex()
    index.add(EN_ES, 1, "Disk full")
    index.add(EN_ES, 1, "Disk full")  # re-adding the same id replaces, never duplicates
    assert len(index) == 1
    index.remove(EN_ES, 1)
    index.remove(EN_ES, 99)  # unknown ids are ignored
    assert len(index) == 0 and index.search(EN_ES, "Disk full", threshold=0.1) == []


def test_common_words_only_query_is_bounded_by_the_budget() -> None:
    index = FuzzyIndex(max_candidates=50)
    for i in range(500):
        index.add(EN_ES, i, f"the file is the file number {i}")
    hits = index.search(EN_ES, "the file is the file", threshold=0.5)
    assert hits and hits[0][1] >= 0.5  # found something among the newest sample, without scanning all 500


@needs_dev
def test_dev_set_near_duplicates_come_back_as_their_source() -> None:
    pairs = dev_pairs()
    index = FuzzyIndex()
    for i, (en, _) in enumerate(pairs):
        index.add(EN_ES, i, en)
    long_ones = [(i, en) for i, (en, _) in enumerate(pairs) if len(en.split()) >= 6][:40]
    found = 0
    for i, en in long_ones:
        words = en.split()
        words[len(words) // 2] = "banana"  # one word swapped
        hits = index.search(EN_ES, " ".join(words), threshold=0.75)
        found += bool(hits) and hits[0][0] == i
    assert found >= 0.9 * len(long_ones)
