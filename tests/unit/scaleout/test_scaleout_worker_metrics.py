"""The worker's /metrics: its state read at scrape time, served on a port of its own, refused clearly when taken."""

from __future__ import annotations

import socket

import httpx
import pytest
from prometheus_client import CollectorRegistry

from peakgate.errors import ConfigError
from peakgate.observe.metrics import Metrics
from peakgate.scaleout.cluster import Counts
from peakgate.scaleout.worker_metrics import WorkerCollector, WorkerState, serve_worker_metrics


def _state(**counts: int) -> WorkerState:
    return WorkerState(counts=Counts(**counts), ready=True, standby=False, held_segments=7)


def test_collector_reads_the_state_at_each_scrape() -> None:
    current = [_state(served=3, failed=1)]
    registry = CollectorRegistry()
    registry.register(WorkerCollector("w1", lambda: current[0]))
    assert registry.get_sample_value("peakgate_worker_entries_total", {"worker": "w1", "outcome": "served"}) == 3
    assert registry.get_sample_value("peakgate_worker_held_segments", {"worker": "w1"}) == 7
    current[0] = WorkerState(counts=Counts(served=9), ready=True, standby=True, held_segments=0)
    assert registry.get_sample_value("peakgate_worker_entries_total", {"worker": "w1", "outcome": "served"}) == 9
    assert registry.get_sample_value("peakgate_worker_ready", {"worker": "w1"}) == 0.0  # standing by takes none


def test_served_on_a_free_port_and_stopped() -> None:
    metrics = Metrics()
    port, stop = serve_worker_metrics(metrics, WorkerCollector("w1", _state), "127.0.0.1", 0)
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
        assert 'peakgate_worker_entries_total{outcome="served",worker="w1"} 0.0' in text
        assert "peakgate_batch_size" in text  # the scheduler's figures share the registry
        assert "process_resident_memory_bytes" in text
    finally:
        stop()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=1)


def test_a_taken_port_is_a_config_error_naming_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError, match=f"127.0.0.1:{port}"):
            serve_worker_metrics(Metrics(), WorkerCollector("w1", _state), "127.0.0.1", port)
