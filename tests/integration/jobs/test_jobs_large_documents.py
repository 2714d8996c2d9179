"""A large document on the served process (`peakgate serve`, stores on disk): /healthz stays fast while it runs,
another tenant's small document finishes first, SIGTERM stops the server within its grace period with the job
handed back to the queue, and the next start finishes it with every line present, in order.

The document is smaller than the 20 MB of the report so the test stays short; that the cost of a chunk does
not grow with the document is shown on the store itself (tests/unit/jobs/test_job_store.py), and
`python -m bench.documents` runs the 20 MB case (docs/hardening.md has its figures).
"""

from __future__ import annotations

import re
import shutil
import time
from pathlib import Path

import pytest

from bench._http import serve
from bench.documents import (
    APERTIUM,
    ECHO,
    KEY_A,
    KEY_B,
    Documents,
    Prober,
    percentiles,
    progress,
    server_config,
    short_lines,
    terminate,
)
from peakgate.backends.apertium import MODES_DIR

GRACE_S = 4.0
# A blocked loop held /healthz for seconds (5 s timeouts); the bound sits far above a loaded runner's ~20-100 ms.
HEALTHZ_P99_MS = 500.0
EXIT_SLACK_S = 1.5  # after the grace period: interpreter and event-loop teardown


def test_a_large_document_leaves_the_server_responsive_fair_and_stoppable(tmp_path: Path) -> None:
    lines = 40_000
    big = short_lines(lines)
    config = server_config(ECHO, tmp_path, grace_s=GRACE_S)
    with serve(config) as server:
        docs = Documents(server.url)
        with Prober(server.url).running() as prober:
            handle = docs.upload(KEY_A, "big.txt", big)
            started = time.monotonic()
            small = docs.upload(KEY_B, "small.txt", short_lines(20, "small"))
            docs.wait_done(small, timeout_s=20)
            assert docs.status(handle)["status"] == "translating"  # the small one overtook it
            assert docs.result(small) == short_lines(20, "small")
            time.sleep(2.0)  # a while of the big document running
            running = prober.since(started)
        docs.close()
        p50, p99, worst = percentiles(running)
        assert len(running) > 20 and p99 < HEALTHZ_P99_MS, (p50, p99, worst)
        status, done = progress(tmp_path, handle)
        assert status == "translating" and 0 < done < lines
        assert terminate(server) < GRACE_S + EXIT_SLACK_S
    status, kept = progress(tmp_path, handle)
    assert status == "queued" and kept >= done  # handed back, its chunks kept
    with serve(config) as server:
        docs = Documents(server.url)
        docs.wait_done(handle, timeout_s=120)
        assert docs.result(handle) == big  # the echo engine: every line back, once, in order
        docs.close()


@pytest.mark.skipif(shutil.which("apertium") is None or not (MODES_DIR / "eng-spa.mode").is_file(),
                    reason="apertium eng-spa is not installed (.ci/run installs it)")
def test_sigterm_with_a_real_engine_chunk_in_flight_then_resume(tmp_path: Path) -> None:
    lines = 3_000
    config = server_config(APERTIUM, tmp_path, grace_s=GRACE_S)
    with serve(config) as server:
        docs = Documents(server.url)
        handle = docs.upload(KEY_A, "doc.txt", short_lines(lines, "house"))
        deadline = time.monotonic() + 60
        while progress(tmp_path, handle)[1] < 200 and time.monotonic() < deadline:
            time.sleep(0.05)
        docs.close()
        assert progress(tmp_path, handle)[1] < lines
        assert terminate(server) < GRACE_S + EXIT_SLACK_S
    with serve(config) as server:
        docs = Documents(server.url)
        docs.wait_done(handle, timeout_s=120)
        translated = docs.result(handle).decode().splitlines()
        docs.close()
    assert len(translated) == lines
    assert [re.findall(r"\d+", line) for line in translated] == [[str(i)] for i in range(lines)]
    assert "house" not in translated[7]  # translated, not echoed
