"""GPU memory utilisation through NVML, when `pynvml` (nvidia-ml-py) is importable and sees a GPU; else None.

The autoscaler reads the GPUs of the machine it runs on: for the local provider, the workers' machine.
"""

from __future__ import annotations

import logging
from typing import Any, Protocol

_log = logging.getLogger(__name__)


class GpuProbe(Protocol):
    def memory_utilisation(self) -> float | None:
        """Used over total memory of the fullest GPU (0..1), or None when there is none to read."""
        ...

    def close(self) -> None: ...


class NoGpu:
    def memory_utilisation(self) -> float | None:
        return None

    def close(self) -> None:
        pass


class NvmlProbe:
    def __init__(self, nvml: Any, handles: list[Any]) -> None:
        self._nvml = nvml
        self._handles = handles

    def memory_utilisation(self) -> float | None:
        try:
            infos = [self._nvml.nvmlDeviceGetMemoryInfo(handle) for handle in self._handles]
        except self._nvml.NVMLError as exc:
            _log.warning("NVML could not read GPU memory: %s", exc)
            return None
        return max((info.used / info.total for info in infos if info.total), default=None)

    def close(self) -> None:
        self._nvml.nvmlShutdown()


def open_gpu_probe() -> GpuProbe:
    """NVML's view of this machine's GPUs, or `NoGpu` without the library, a driver or a device."""
    try:
        import pynvml
    except ImportError:
        return NoGpu()
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    except pynvml.NVMLError as exc:
        _log.info("no GPU signal: NVML unavailable (%s)", exc)
        return NoGpu()
    if not handles:
        pynvml.nvmlShutdown()
        return NoGpu()
    return NvmlProbe(pynvml, handles)
