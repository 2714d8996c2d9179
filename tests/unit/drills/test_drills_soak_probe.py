import os
from pathlib import Path

from peakgate.drills.soak_probe import parse_process_metrics, read_tree

TEXT = """# HELP process_resident_memory_bytes Resident memory size in bytes.
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 1.2e+08
# HELP process_open_fds Number of open file descriptors.
# TYPE process_open_fds gauge
process_open_fds 42.0
# HELP peakgate_queue_length q
# TYPE peakgate_queue_length gauge
peakgate_queue_length{model="x"} 3.0
"""


def test_parse_process_metrics() -> None:
    assert parse_process_metrics(TEXT) == {"rss_bytes": 1.2e8, "open_fds": 42.0}


def _proc(root: Path, pid: int, rss_kb: int, fds: int, children: list[int]) -> None:
    d = root / str(pid)
    (d / "fd").mkdir(parents=True)
    for i in range(fds):
        (d / "fd" / str(i)).touch()
    (d / "status").write_text(f"Name:\tx\nVmRSS:\t {rss_kb} kB\n")
    (d / "task" / str(pid)).mkdir(parents=True)
    (d / "task" / str(pid) / "children").write_text(" ".join(map(str, children)))


def test_read_tree_sums_children(tmp_path: Path) -> None:
    _proc(tmp_path, 10, 1000, 5, [11, 99])  # 99 exited: skipped
    _proc(tmp_path, 11, 300, 2, [12])
    _proc(tmp_path, 12, 200, 1, [])
    tree = read_tree(10, tmp_path)
    assert (tree.rss_bytes, tree.engine_rss_bytes, tree.open_fds) == (1000 * 1024, 500 * 1024, 8)


def test_read_tree_of_this_process() -> None:
    tree = read_tree(os.getpid())
    assert tree.rss_bytes > 10 * 1024 * 1024 and tree.open_fds >= 3
