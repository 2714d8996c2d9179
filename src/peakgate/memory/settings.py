"""Translation-memory settings; the lead hooks `TmConfig` into `Settings`."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

TmBackend = Literal["sqlite"]


class TmConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    enabled: bool = True
    backend: TmBackend = "sqlite"
    path: Path | None = None  # None: `<data_dir>/tm.sqlite3`; relative paths live under data_dir
    fuzzy_threshold: float = Field(default=0.75, ge=0.0, le=1.0)
    repair: bool = True  # patch a one-span fuzzy match instead of translating the whole segment
    repair_max_words: int = Field(default=3, ge=1)
    max_entry_chars: int = Field(default=5_000, ge=1)
    # Fuzzy candidates scored per lookup (rarest shared words first). Scoring is C-fast and ranking Python-slow,
    # so a wide pool is cheap: 1500 keeps p99 ~2-3 ms over 100k entries (bench/tm_fuzzy.py) and found the
    # brute-force best on every bench query, where 20 missed ~13 % of them.
    max_candidates: int = Field(default=1_500, ge=1)
    refresh_s: float = Field(default=10.0, gt=0)  # how often a server indexes rows other processes imported
    # Exact lookups skip scopes with no entries; the list of those is re-read from the file at most this often,
    # so a scope a `tm import` in another process creates serves exact hits within this delay.
    scope_recheck_s: float = Field(default=0.05, ge=0)
