"""GPU utilisation and memory per device through NVML, on the service's registry, when a GPU exists.

NVML (`pynvml`, nvidia-ml-py) is opened at the first scrape, not at start-up: a machine without the library,
a driver or a device exports no GPU series at all (rather than zeros that would read as an idle GPU), and
looks again at no later scrape.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

_log = logging.getLogger(__name__)


def _open_nvml() -> Any | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        _log.info("no GPU metrics: NVML unavailable (%s)", exc)
        return None
    return pynvml


class GpuCollector(Collector):
    """`peakgate_gpu_utilization_ratio{gpu}`, `peakgate_gpu_memory_used_bytes{gpu}`,
    `peakgate_gpu_memory_total_bytes{gpu}`; `gpu` is the device index, so the label set is the machine's GPUs."""

    def __init__(self, open_nvml: Callable[[], Any | None] = _open_nvml) -> None:
        self._open = open_nvml
        self._nvml: Any | None = None
        self._tried = False

    def describe(self) -> list[Metric]:
        return []  # nothing to check for clashes at registration, and NVML stays closed until a scrape

    def collect(self) -> Iterator[Metric]:
        if not self._tried:
            self._tried = True
            self._nvml = self._open()
        if self._nvml is None:
            return
        utilisation = GaugeMetricFamily("peakgate_gpu_utilization_ratio",
                                        "Share of NVML's last sample period a kernel ran on the GPU", labels=["gpu"])
        used = GaugeMetricFamily("peakgate_gpu_memory_used_bytes", "GPU memory in use (NVML)", labels=["gpu"])
        total = GaugeMetricFamily("peakgate_gpu_memory_total_bytes", "GPU memory installed (NVML)", labels=["gpu"])
        nvml = self._nvml
        try:
            for index in range(nvml.nvmlDeviceGetCount()):
                handle = nvml.nvmlDeviceGetHandleByIndex(index)
                memory = nvml.nvmlDeviceGetMemoryInfo(handle)
                utilisation.add_metric([str(index)], nvml.nvmlDeviceGetUtilizationRates(handle).gpu / 100.0)
                used.add_metric([str(index)], float(memory.used))
                total.add_metric([str(index)], float(memory.total))
        except nvml.NVMLError as exc:  # a GPU fallen off the bus must not fail the whole scrape
            _log.warning("NVML could not read the GPUs: %s", exc)
            return
        yield from (utilisation, used, total)
