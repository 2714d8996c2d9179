"""The CTranslate2 backend's pure decoding-guard pieces: length groups, relative caps, remembered confidences."""

from __future__ import annotations

from pathlib import Path

import pytest

from peakgate.backends.ctranslate2_backend import (
    CTranslate2Backend,
    DecodingGuards,
    RecentConfidences,
    decoding_cap,
    length_groups,
    score_key,
)
from peakgate.backends.factory import build_backend
from peakgate.config import ModelConfig


def test_length_groups_sort_by_length_and_cover_every_index_once() -> None:
    lengths = [5, 40, 3, 7, 3, 12]
    groups = length_groups(lengths, 2)
    assert groups == [[2, 4], [0, 3], [5, 1]]
    assert [lengths[i] for g in groups for i in g] == sorted(lengths)
    assert length_groups(lengths, 0) == [[2, 4, 0, 3, 5, 1]]  # 0: one group, still sorted
    assert length_groups([], 16) == []


@pytest.mark.parametrize(("longest", "ratio", "ceiling", "cap"), [
    (13, 2.0, 256, 36),  # "Could not get image width (bad TIFF file)": 13 tokens -> 36 steps, not 256
    (1, 2.0, 256, 12),
    (200, 2.0, 256, 256),  # never past the class's cap
    (13, None, 256, 256),  # off
    (13, 2.0, 2, 2),  # a request's own tighter cap wins
])
def test_the_decoding_cap_follows_the_longest_source(longest: int, ratio: float | None, ceiling: int,
                                                     cap: int) -> None:
    assert decoding_cap(longest, ratio, ceiling) == cap


def test_confidences_are_filed_under_canonical_text_and_bounded() -> None:
    recent = RecentConfidences(capacity=2)
    recent.put(["Open  the file", "Save"], [-0.3, -0.5])
    assert recent.get(" Open the file ") == -0.3
    assert score_key("Cafe\u0301") == score_key("Café")
    recent.put(["Close"], [-0.7])
    assert recent.get("Save") == -0.5 and recent.get("Close") == -0.7
    assert recent.get("Open the file") is None  # the oldest went first


def test_the_factory_passes_the_models_guards_and_the_defaults_are_on() -> None:
    config = ModelConfig(name="s", engine="ctranslate2", source="en", target="es", path="student")
    off = config.model_copy(update={"max_decoding_length_ratio": None, "no_repeat_ngram_size": 0,
                                    "repetition_penalty": 1.0, "length_group_size": 0})
    served, plain = (build_backend(c, Path("/srv/models")) for c in (config, off))
    assert isinstance(served, CTranslate2Backend) and isinstance(plain, CTranslate2Backend)
    assert served.guards == DecodingGuards(2.0, 3, 1.1, 16)
    assert plain.guards == DecodingGuards.off()
