"""Signals from what gateways and workers publish: the Prometheus figures over a trailing window (read from a
real gateway registry's exposition), the snapshot assembled from queue, heartbeats and gateways, and NVML."""

from __future__ import annotations

import math
import sys
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from autoscale_fakes import Gateways, beat

from peakgate.clock import FakeClock
from peakgate.control.signals import ClusterSignals, class_streams
from peakgate.control.signals_gpu import NoGpu, NvmlProbe, open_gpu_probe
from peakgate.control.signals_prom import GatewayFigures, GatewayScraper, parse_scrape, quantile_ms
from peakgate.errors import BadRequest
from peakgate.observe.metrics import Metrics
from peakgate.scaleout.cluster import Heartbeat
from peakgate.scaleout.metrics import QueueMetrics


def _gateway(latencies_s: list[float], requests: int, waiting: int) -> bytes:
    """A gateway's /metrics after serving `requests` requests with `latencies_s`, `waiting` sent to workers."""
    metrics = Metrics()
    for n in range(requests):
        metrics.requests.labels("/v1/translate", "medium", "200" if n % 2 else "503").inc()
    for latency in latencies_s:
        metrics.request_latency.labels("/v1/translate" if latency < 1 else "/translate", "medium").observe(latency)
    QueueMetrics(metrics.registry).waiting.set(waiting)
    return metrics.render()


def test_a_gateways_exposition_reads_as_totals_summed_over_labels() -> None:
    scrape = parse_scrape(_gateway([0.02, 0.2, 3.0], requests=5, waiting=4).decode(), at_s=7.0)
    assert scrape.requests == 5 and scrape.in_flight == 4 and scrape.at_s == 7.0
    assert scrape.buckets[0.025] == 1 and scrape.buckets[0.25] == 2 and scrape.buckets[math.inf] == 3
    with pytest.raises(BadRequest):
        parse_scrape("peakgate_requests_total{endpoint=broken 1\n", at_s=0.0)


def test_the_p95_is_interpolated_inside_its_bucket_like_histogram_quantile() -> None:
    assert quantile_ms(0.95, {}) == 0.0
    assert quantile_ms(0.95, {0.1: 0.0, math.inf: 0.0}) == 0.0
    assert quantile_ms(0.95, {0.1: 0.0, 0.2: 100.0, math.inf: 100.0}) == pytest.approx(195.0)
    assert quantile_ms(0.5, {0.1: 50.0, 0.2: 100.0, math.inf: 100.0}) == pytest.approx(100.0)
    assert quantile_ms(0.95, {0.1: 10.0, 0.5: 10.0, math.inf: 100.0}) == pytest.approx(500.0)  # past the last bound


async def test_rate_and_p95_come_from_the_window_and_a_silent_gateway_is_left_out() -> None:
    gateways = Gateways()
    a, b = "http://10.0.0.1:8080", "http://10.0.0.2:8080"
    async with httpx.AsyncClient(transport=httpx.MockTransport(gateways.handler)) as client:
        scraper = GatewayScraper([a, b + "/"], client, window_s=10.0)
        gateways.pages = {a: _gateway([0.05] * 10, 10, 1), b: _gateway([], 0, 2)}
        first = await scraper.read(0.0)
        assert first == GatewayFigures(0.0, 0.0, 3, 2)  # one scrape each: no window yet
        gateways.pages = {a: _gateway([0.05] * 10 + [0.4] * 20, 30, 0), b: _gateway([0.05] * 20, 20, 5)}
        figures = await scraper.read(5.0)
        assert figures.request_rate_per_s == pytest.approx(8.0)  # (20 + 20) / 5 s
        assert figures.p95_latency_ms == pytest.approx(475.0)  # 40 new: 20 at <= 0.05, 20 in (0.25, 0.5]
        assert figures.in_flight == 5 and figures.answered == 2
        gateways.pages[b] = None
        figures = await scraper.read(6.0)
        assert figures.answered == 1 and figures.request_rate_per_s == pytest.approx(20 / 6)


async def test_a_restarted_gateway_starts_its_window_again_and_old_scrapes_leave_it() -> None:
    gateways = Gateways()
    a = "http://10.0.0.1:8080"
    async with httpx.AsyncClient(transport=httpx.MockTransport(gateways.handler)) as client:
        scraper = GatewayScraper([a], client, window_s=10.0)
        for at_s, requests in ((0.0, 100), (5.0, 200)):
            gateways.pages[a] = _gateway([], requests, 0)
            await scraper.read(at_s)
        gateways.pages[a] = _gateway([], 10, 0)  # restarted: counters from zero
        assert (await scraper.read(6.0)).request_rate_per_s == 0.0
        for at_s, requests in ((8.0, 30), (16.0, 110), (20.0, 150)):
            gateways.pages[a] = _gateway([], requests, 0)
            figures = await scraper.read(at_s)
        assert figures.request_rate_per_s == pytest.approx((150 - 30) / 12)  # from the newest scrape >= 10 s old


class _Queue:
    def __init__(self, waiting: dict[str, int], beats: list[Heartbeat]) -> None:
        self._waiting = waiting
        self._beats = beats
        self.asked: list[str] = []

    async def waiting(self, streams: list[str]) -> dict[str, int]:
        self.asked = list(streams)
        return self._waiting

    async def heartbeats(self) -> list[Heartbeat]:
        return self._beats


class _Figures:
    async def read(self, at_s: float) -> GatewayFigures:
        return GatewayFigures(12.5, 180.0, 9, 1)


class _Gpu(NoGpu):
    def memory_utilisation(self) -> float | None:
        return 0.5


async def test_a_snapshot_counts_serving_workers_and_sums_waiting_entries_per_class() -> None:
    streams = class_streams("pg", ["m1", "m2"])
    assert streams["interactive"] == ["pg:q:m1:interactive", "pg:q:m2:interactive"]
    queue = _Queue({"pg:q:m1:interactive": 3, "pg:q:m2:interactive": 4, "pg:q:m2:batch": 10}, [
        beat("a", cpu=0.5, capacity=10.0), beat("b", cpu=1.7, capacity=20.0),  # capped at one core
        beat("w", warm=True, standby=True, cpu=0.0), beat("d", draining=True), beat("s", ready=False),
        beat("p", warm=True, cpu=0.3, capacity=30.0),  # a promoted warm worker serves
    ])
    clock = FakeClock(start=42.0)
    source = ClusterSignals(queue=queue, gateways=_Figures(), gpu=_Gpu(), streams=streams, clock=clock)
    snap = await source.snapshot()
    assert sorted(queue.asked) == sorted(s for names in streams.values() for s in names)
    assert snap.at_s == 42.0 and snap.replicas == 3
    assert dict(snap.queue_by_class) == {"interactive": 7, "document": 0, "batch": 10}
    assert snap.cpu_utilisation == pytest.approx((0.5 + 1.0 + 0.3) / 3)
    assert snap.capacity_per_replica_per_s == pytest.approx(20.0)
    assert (snap.request_rate_per_s, snap.p95_latency_ms, snap.in_flight) == (12.5, 180.0, 9)
    assert snap.gpu_memory_utilisation == 0.5


async def test_no_serving_worker_reads_as_zero_utilisation_and_capacity() -> None:
    source = ClusterSignals(queue=_Queue({}, []), gateways=_Figures(), gpu=NoGpu(), streams=class_streams("pg", ["m"]),
                            clock=FakeClock())
    snap = await source.snapshot()
    assert (snap.replicas, snap.cpu_utilisation, snap.capacity_per_replica_per_s) == (0, 0.0, 0.0)
    assert snap.gpu_memory_utilisation is None


class _Nvml:
    class NVMLError(Exception):
        pass

    def __init__(self, memory: list[tuple[int, int]], failing: bool = False) -> None:
        self.memory = memory
        self.failing = failing
        self.shut = False

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> Any:
        if self.failing:
            raise self.NVMLError("GPU is lost")
        used, total = self.memory[handle]
        return SimpleNamespace(used=used, total=total)

    def nvmlShutdown(self) -> None:
        self.shut = True


def test_nvml_reads_the_fullest_gpu_and_a_failure_reads_as_unknown() -> None:
    nvml = _Nvml([(2, 10), (6, 8)])
    probe = NvmlProbe(nvml, [0, 1])
    assert probe.memory_utilisation() == pytest.approx(0.75)
    nvml.failing = True
    assert probe.memory_utilisation() is None
    probe.close()
    assert nvml.shut


def test_the_gpu_probe_is_nvml_when_it_loads_and_sees_a_device_else_none(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pynvml", None)  # not installed
    assert isinstance(open_gpu_probe(), NoGpu)
    nvml = _Nvml([(1, 4)])
    module = SimpleNamespace(NVMLError=_Nvml.NVMLError, nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 1,
                             nvmlDeviceGetHandleByIndex=lambda i: i, nvmlShutdown=nvml.nvmlShutdown,
                             nvmlDeviceGetMemoryInfo=nvml.nvmlDeviceGetMemoryInfo)
    monkeypatch.setitem(sys.modules, "pynvml", module)
    assert open_gpu_probe().memory_utilisation() == pytest.approx(0.25)

    def no_driver() -> None:
        raise _Nvml.NVMLError("driver not loaded")

    monkeypatch.setattr(module, "nvmlInit", no_driver)
    assert isinstance(open_gpu_probe(), NoGpu)
    monkeypatch.setattr(module, "nvmlInit", lambda: None)
    monkeypatch.setattr(module, "nvmlDeviceGetCount", lambda: 0)
    assert isinstance(open_gpu_probe(), NoGpu) and nvml.shut
