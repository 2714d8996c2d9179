"""Where replicas come from, behind one protocol (`base.ScalingProvider`), picked by `autoscale.provider`."""

from __future__ import annotations

from pathlib import Path

from peakgate.clock import Clock
from peakgate.control.loop_settings import AutoscaleConfig
from peakgate.control.providers.base import BeatSource, ScalingProvider


def build_provider(config: AutoscaleConfig, config_path: Path | None, beats: BeatSource,
                   clock: Clock) -> ScalingProvider:
    """`local`: worker processes started with `config_path`; `kubernetes`: the configured Deployments."""
    if config.provider == "kubernetes":
        from peakgate.control.providers.kubernetes import KubernetesProvider, connect_apps_api

        return KubernetesProvider(connect_apps_api(config.kubernetes), config.kubernetes, clock)
    from peakgate.control.providers.local import LocalProvider, WorkerSpawner

    return LocalProvider(WorkerSpawner(config_path, config.local), beats, config.local, clock)
