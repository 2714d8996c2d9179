"""What a soak samples: the target's process figures from /metrics, and a local process tree from /proc.

Engine processes (e.g. Apertium pipelines) are children of the gateway, so a leak in them is invisible in the
gateway's own RSS: the tree walk sums the children's RSS separately as engine memory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

_PROCESS = {"process_resident_memory_bytes": "rss_bytes", "process_open_fds": "open_fds",
            "process_cpu_seconds_total": "cpu_s"}


def parse_process_metrics(text: str) -> dict[str, float]:
    """The ProcessCollector's figures present in Prometheus text (absent ones are left out, not zero)."""
    lines = "\n".join(line for line in text.splitlines() if line.startswith(("process_", "# ")))
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(lines + "\n"):
        for s in family.samples:
            if s.name in _PROCESS:
                out[_PROCESS[s.name]] = s.value
    return out


@dataclass(frozen=True, slots=True)
class TreeSample:
    rss_bytes: int  # the process itself
    engine_rss_bytes: int  # all its descendants together
    open_fds: int  # the process and its descendants


def _vmrss(status: Path) -> int:
    for line in status.read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    return 0  # a zombie or kernel thread has no VmRSS line


def children(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """The direct children of `pid` (empty once it is gone)."""
    out: list[int] = []
    for task in (proc / str(pid) / "task").glob("*/children"):
        try:
            out += [int(c) for c in task.read_text().split()]
        except OSError:
            continue  # a thread that ended mid-walk
    return out


def read_tree(pid: int, proc: Path = Path("/proc")) -> TreeSample:
    """Raises OSError when `pid` itself is gone; a child that exits mid-walk is skipped."""
    own = _vmrss(proc / str(pid) / "status")
    fds = len(list((proc / str(pid) / "fd").iterdir()))
    engine, todo = 0, children(pid, proc)
    while todo:
        child = todo.pop()
        try:
            engine += _vmrss(proc / str(child) / "status")
            fds += len(list((proc / str(child) / "fd").iterdir()))
            todo += children(child, proc)
        except OSError:
            continue
    return TreeSample(own, engine, fds)
