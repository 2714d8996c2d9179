"""Starting an engine's worker threads at a lower CPU priority (Linux `nice`, which is per thread there).

An engine such as CTranslate2 creates its worker threads in C++, out of Python's reach; on Linux a new thread
inherits the nice value of the thread that creates it. So the engine is built on a short-lived thread that
first lowers its own priority: the engine's workers start at that value and every other thread keeps its own.
Raising a nice value needs no privilege; it cannot be lowered again without one, hence the throwaway thread.
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

NICE_SUPPORTED = sys.platform == "linux"  # elsewhere a thread id is not a priority target


def run_at_nice(fn: Callable[[], T], nice: int) -> T:
    """`fn()` on a fresh thread whose nice value is raised by `nice` (0 runs it in place); blocks until done."""
    if nice <= 0 or not NICE_SUPPORTED:
        return fn()
    result: list[T] = []
    failure: list[BaseException] = []

    def body() -> None:
        try:
            own = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, own, os.getpriority(os.PRIO_PROCESS, own) + nice)
            result.append(fn())
        except BaseException as exc:  # handed back to the caller's thread below
            failure.append(exc)

    thread = threading.Thread(target=body, name="peakgate-niced-start", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return result[0]
