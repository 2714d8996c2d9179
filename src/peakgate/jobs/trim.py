"""Hands freed heap memory back to the OS after a big document is rebuilt.

Rebuilding holds the whole document several times over (its lines, their translations, the output) for a
moment; glibc keeps most of that heap once it is freed, so RSS stayed ~200 MB up for good after a 20 MB
document (bench.documents), and `malloc_trim` brings it back near idle. A no-op where libc has no malloc_trim.
"""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable

TRIM_AFTER_SEGMENTS = 10_000  # smaller documents leave too little behind to be worth a trim


def _malloc_trim() -> Callable[[int], int] | None:
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"))
    except OSError:
        return None
    trim: Callable[[int], int] | None = getattr(libc, "malloc_trim", None)
    return trim


_TRIM = _malloc_trim()


def release_freed_memory() -> None:
    """Blocking (it walks the heap, without the GIL): call it off the event loop."""
    if _TRIM is not None:
        _TRIM(0)
