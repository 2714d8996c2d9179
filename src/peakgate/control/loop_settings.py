"""Autoscaler settings (`[autoscale]` in the file gateways and workers read); `Settings.autoscale` holds one."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from peakgate.control.clamps import ClampConfig
from peakgate.control.cost import CostConfig
from peakgate.control.forecast_config import ForecastConfig
from peakgate.control.policies import PolicyConfig
from peakgate.control.threshold import ThresholdConfig
from peakgate.control.trough import TroughConfig

ProviderKind = Literal["local", "kubernetes"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class LocalProviderConfig(_Frozen):
    """`peakgate worker` processes on this machine, started with the autoscaler's own `--config`."""

    worker_args: tuple[str, ...] = ()  # more `peakgate worker` arguments, e.g. ["--models", "student-en-es-int8"]
    log_dir: Path = Path("var/autoscale")  # one log file per worker process
    start_timeout_s: float = Field(default=120.0, gt=0)  # not ready by then: a failed start (killed, retried)
    # A draining worker finishes what it holds within its `shutdown_grace_s`; past this it is killed, and what
    # it still held stays pending in Redis for another worker (never dropped).
    stop_timeout_s: float = Field(default=30.0, gt=0)
    backoff_initial_s: float = Field(default=1.0, gt=0)  # after a failed start, doubling per failure in a row
    backoff_max_s: float = Field(default=60.0, gt=0)


class KubernetesProviderConfig(_Frozen):
    """Two Deployments scaled through their `scale` subresource: the workers and the warm pool."""

    namespace: str = "peakgate"
    deployment: str = "peakgate-worker"
    warm_deployment: str | None = "peakgate-worker-warm"  # None: no warm pool
    # None: the pod's service account when in a cluster, else the current kubeconfig context.
    api_url: str | None = None
    request_timeout_s: float = Field(default=5.0, gt=0)


class WarmPoolConfig(_Frozen):
    """Standby workers (models loaded, no traffic) promoted while a scale-up's cold replicas start."""

    replicas: int = Field(default=1, ge=0)  # the pool without a forecast (0: no warm pool)
    max_replicas: int = Field(default=4, ge=0)  # the most a forecast may ask for


class AutoscaleConfig(_Frozen):
    provider: ProviderKind = "local"
    policy: PolicyConfig = ThresholdConfig()  # its `tick_s` is the loop's period
    forecast: ForecastConfig | None = None  # None: no forecast (the warm pool keeps `warm.replicas`)
    clamps: ClampConfig = ClampConfig()
    gateways: tuple[str, ...] = ()  # base URLs of the gateways whose /metrics are read (p95, in flight, rate)
    signal_window_s: float = Field(default=60.0, gt=0)  # request rate and p95 over this trailing window
    scrape_timeout_s: float = Field(default=2.0, gt=0)
    startup_prior_s: float = Field(default=10.0, ge=0)  # cold start assumed until one is measured
    backoff_initial_s: float = Field(default=1.0, gt=0)  # a failing provider call: skip it this long, doubling
    backoff_max_s: float = Field(default=60.0, gt=0)
    metrics_host: str = "127.0.0.1"
    metrics_port: int | None = 9108  # the autoscaler's own /metrics; None: not served
    warm: WarmPoolConfig = WarmPoolConfig()
    cost: CostConfig = CostConfig()  # prices for `peakgate_cost_total` (example list prices: set yours)
    offpeak: TroughConfig = TroughConfig()  # the forecast trough published for deferrable jobs
    local: LocalProviderConfig = LocalProviderConfig()
    kubernetes: KubernetesProviderConfig = KubernetesProviderConfig()
