"""A worker's own /metrics, for Prometheus to scrape beside the gateways (`queue.worker_metrics_port`).

The registry holds the worker's scheduler figures (queue length and wait, batch sizes, engine busy time, as a
gateway's in-process scheduler exports them), its entry counts and state read at each scrape, and `process_*`
(RSS, CPU, open files). prometheus-client serves it from its own thread: a scrape never waits on the event loop,
so a worker whose loop is saturated still answers, and the collector only reads plain counters.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prometheus_client import start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from peakgate.errors import ConfigError
from peakgate.observe.metrics import Metrics
from peakgate.scaleout.cluster import Counts


@dataclass(frozen=True, slots=True)
class WorkerState:
    counts: Counts
    ready: bool
    standby: bool
    held_segments: int


class WorkerCollector(Collector):
    def __init__(self, worker_id: str, state: Callable[[], WorkerState]) -> None:
        self._worker_id = worker_id
        self._state = state

    def describe(self) -> list[CounterMetricFamily | GaugeMetricFamily]:
        return []  # read at scrape time only

    def collect(self) -> Iterator[CounterMetricFamily | GaugeMetricFamily]:
        state = self._state()
        entries = CounterMetricFamily("peakgate_worker_entries", "Queue entries this worker finished, by outcome "
                                      "(served, failed, expired, malformed) and entries it reclaimed from a worker "
                                      "presumed dead", labels=["worker", "outcome"])
        for outcome in ("served", "failed", "expired", "malformed", "reclaimed"):
            entries.add_metric([self._worker_id, outcome], getattr(state.counts, outcome))
        ready = GaugeMetricFamily("peakgate_worker_ready", "1 while the worker takes work (engines warm, groups "
                                  "joined, not draining, not standing by)", labels=["worker"])
        ready.add_metric([self._worker_id], 1.0 if state.ready and not state.standby else 0.0)
        held = GaugeMetricFamily("peakgate_worker_held_segments", "Segments read from the queue and not yet "
                                 "answered", labels=["worker"])
        held.add_metric([self._worker_id], state.held_segments)
        yield from (entries, ready, held)


def serve_worker_metrics(metrics: Metrics, collector: WorkerCollector, host: str,
                         port: int) -> tuple[int, Callable[[], None]]:
    """Start serving `metrics` (with `collector` added) on host:port (0: a free one); returns the port it
    listens on and the function that stops it."""
    metrics.registry.register(collector)
    try:
        server, thread = start_http_server(port, addr=host, registry=metrics.registry)
    except OSError as exc:
        raise ConfigError(f"worker metrics cannot listen on {host}:{port}: {exc.strerror or exc}") from exc

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)

    return server.server_port, stop
