"""The TM store seam: a small protocol; `sqlite_store.SqliteTmStore` is the embedded default.

Entries are keyed by (tenant, source_lang, target_lang, normalized source). Lookups are per scope; the facade
decides the scope order (a tenant's own entries first, then the shared tenant "").
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import NamedTuple, Protocol

from peakgate.errors import PeakgateError
from peakgate.memory.entry import AddResult, TmEntry, TmMatch


class Scope(NamedTuple):
    tenant: str
    source_lang: str
    target_lang: str


class TmStoreError(PeakgateError):
    """The TM database failed (locked, corrupt, unwritable)."""

    code = "tm_store_error"


class TmStore(Protocol):
    def add_many(self, entries: Iterable[TmEntry]) -> AddResult:
        """Upsert every entry in ONE transaction; if the iterable raises, nothing is written and it re-raises."""
        ...

    def exact(self, scope: Scope, source: str) -> TmEntry | None: ...

    def has_entries(self, scope: Scope) -> bool:
        """Whether `scope` holds anything (cheap: asked once per request before any lookup)."""
        ...

    def fuzzy(self, scope: Scope, source: str, *, threshold: float, limit: int = 1) -> list[TmMatch]: ...

    def iter_entries(self, *, tenant: str | None = None, source_lang: str | None = None,
                     target_lang: str | None = None) -> Iterator[TmEntry]: ...

    def count(self, *, tenant: str | None = None, source_lang: str | None = None,
              target_lang: str | None = None) -> int: ...

    def delete(self, scope: Scope, source: str) -> bool: ...

    def refresh(self) -> int:
        """Pick up entries other processes wrote (the fuzzy index is per process); returns how many."""
        ...

    def close(self) -> None: ...
