"""Shared helpers for the memory tests: dev-set pairs, a fake span translator, entry builders."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bench._common import default_dev_path
from peakgate.memory.entry import Origin, TmEntry

DEV = default_dev_path()
needs_dev = pytest.mark.skipif(not DEV.is_file(), reason=f"dev set {DEV} is missing")
STAMP = "2026-01-02T03:04:05+00:00"


def dev_pairs(limit: int | None = None) -> list[tuple[str, str]]:
    """(English, Spanish) human pairs from the dev TSV (catalog, en, es)."""
    pairs = []
    for line in DEV.read_text(encoding="utf-8").splitlines():
        fields = line.split("\t")
        if len(fields) == 3 and fields[1] and fields[2]:
            pairs.append((fields[1], fields[2]))
    return pairs[:limit]


def entry(source: str, target: str, *, tenant: str = "", origin: Origin = "human", sl: str = "en",
          tl: str = "es", model: str | None = None) -> TmEntry:
    return TmEntry(sl, tl, source, target, tenant, origin, model, None, STAMP)


class FakeTranslator:
    """Translates from a fixed glossary; records every call."""

    def __init__(self, glossary: dict[str, str]) -> None:
        self.glossary = glossary
        self.calls: list[tuple[tuple[str, ...], str, str]] = []

    async def __call__(self, texts: Sequence[str], source_lang: str, target_lang: str) -> list[str]:
        self.calls.append((tuple(texts), source_lang, target_lang))
        return [self.glossary.get(t, f"<{t}>") for t in texts]
