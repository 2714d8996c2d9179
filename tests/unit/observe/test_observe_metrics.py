"""What /metrics exports beyond the request path: process, GPU (NVML) and SLO series, with bounded labels."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from peakgate.clock import FakeClock
from peakgate.observe.gpu import GpuCollector
from peakgate.observe.metrics import Metrics
from peakgate.observe.slo_export import ClassSlos
from peakgate.observe.slo_settings import SloConfig

Samples = dict[tuple[str, tuple[tuple[str, str], ...]], float]


def _samples(text: bytes) -> Samples:
    return {(s.name, tuple(sorted(s.labels.items()))): s.value
            for family in text_string_to_metric_families(text.decode()) for s in family.samples}


def _value(samples: Samples, name: str, **labels: str) -> float:
    return samples[name, tuple(sorted(labels.items()))]


def test_process_rss_cpu_and_open_files_are_exported() -> None:
    samples = _samples(Metrics().render())
    assert _value(samples, "process_resident_memory_bytes") > 0
    assert _value(samples, "process_open_fds") > 0
    assert ("process_cpu_seconds_total", ()) in samples and ("process_max_fds", ()) in samples


def test_slo_gauges_and_event_counters_follow_the_outcomes() -> None:
    clock, metrics = FakeClock(), Metrics()
    slos = ClassSlos(SloConfig(), clock, metrics)
    samples = _samples(metrics.render())
    assert _value(samples, "peakgate_slo_objective", slo="interactive_availability") == 0.999
    windows = {dict(labels)["window"] for (name, labels) in samples if name == "peakgate_slo_burn_rate"}
    assert windows == {"5m", "30m", "1h", "6h", "3d"}
    assert _value(samples, "peakgate_slo_alert", slo="batch_availability", severity="ticket") == 0.0
    assert _value(samples, "peakgate_slo_events_total", slo="document_latency", outcome="bad") == 0.0  # made early
    slos.served("interactive", 0.1)
    slos.served("interactive", 0.5)  # over the 300 ms threshold
    slos.failed("interactive", "shed")
    slos.failed("batch", "error")
    clock.advance(1.0)
    samples = _samples(metrics.render())
    assert _value(samples, "peakgate_slo_events_total", slo="interactive_latency", outcome="good") == 1.0
    assert _value(samples, "peakgate_slo_events_total", slo="interactive_latency", outcome="bad") == 1.0
    assert _value(samples, "peakgate_slo_events_total", slo="interactive_availability", outcome="good") == 2.0
    assert _value(samples, "peakgate_class_requests_total", **{"class": "batch", "outcome": "error"}) == 1.0
    assert _value(samples, "peakgate_class_latency_seconds_count", **{"class": "interactive"}) == 2.0
    # one bad in three against a 0.1 % budget: 333x in every window, both page pairs and the ticket one fire
    assert _value(samples, "peakgate_slo_burn_rate", slo="interactive_availability", window="5m") == pytest.approx(
        1 / 3 / 0.001)
    assert _value(samples, "peakgate_slo_alert", slo="interactive_availability", severity="page") == 1.0
    assert 0 < _value(samples, "peakgate_slo_error_budget_remaining", slo="batch_availability") < 1


class _FakeNvml:
    """The pynvml calls the collector makes (under their pynvml names), for two GPUs."""

    class NVMLError(Exception):
        pass

    def __init__(self) -> None:
        self.broken = False

    def nvmlDeviceGetCount(self) -> int:
        if self.broken:
            raise self.NVMLError("GPU is lost")
        return 2

    def nvmlDeviceGetHandleByIndex(self, index: int) -> int:
        return index

    def nvmlDeviceGetMemoryInfo(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(used=(handle + 1) * 2**30, total=16 * 2**30)

    def nvmlDeviceGetUtilizationRates(self, handle: int) -> SimpleNamespace:
        return SimpleNamespace(gpu=40 + handle)


def _gpu_registry(opened: list[int], nvml: object | None) -> CollectorRegistry:
    registry = CollectorRegistry()

    def open_nvml() -> object | None:
        opened.append(1)
        return nvml

    registry.register(GpuCollector(open_nvml))
    return registry


def test_gpu_utilisation_and_memory_per_device_through_nvml() -> None:
    opened: list[int] = []
    nvml = _FakeNvml()
    registry = _gpu_registry(opened, nvml)
    samples = _samples(generate_latest(registry))
    assert _value(samples, "peakgate_gpu_utilization_ratio", gpu="1") == pytest.approx(0.41)
    assert _value(samples, "peakgate_gpu_memory_used_bytes", gpu="0") == 2**30
    assert _value(samples, "peakgate_gpu_memory_total_bytes", gpu="1") == 16 * 2**30
    nvml.broken = True
    assert _samples(generate_latest(registry)) == {}  # a failed read drops the GPU series, not the scrape
    assert opened == [1]


def test_no_gpu_no_gpu_series_and_nvml_is_not_asked_again() -> None:
    opened: list[int] = []
    registry = _gpu_registry(opened, None)
    assert _samples(generate_latest(registry)) == {}
    assert _samples(generate_latest(registry)) == {}
    assert opened == [1]
