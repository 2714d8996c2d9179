"""`peakgate autoscale`: the control loop beside the gateways, on the config file they and the workers read.

It needs the Redis queue (`[queue] backend = "redis"`): the signals come from the shared queue, the workers'
heartbeats and the `/metrics` of the gateways listed in `autoscale.gateways`. `--provider` overrides
`autoscale.provider`. The local provider starts workers with this same `--config`. SIGTERM or SIGINT stops
the loop; the local provider then drains its workers before the process exits. Its own metrics (decisions,
replicas, cold-start and warm-promotion times, the live cost `peakgate_cost_total`) are served on
`autoscale.metrics_port`. With a forecaster it also publishes the forecast trough for deferrable jobs.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Iterator
from pathlib import Path

import httpx
from prometheus_client import start_http_server

from peakgate.clock import Clock, MonotonicClock
from peakgate.config import Settings, load_settings
from peakgate.control.contract import TickObserver
from peakgate.control.cost import CostMeter
from peakgate.control.cost_live import LiveCost
from peakgate.control.forecast_config import build_forecaster
from peakgate.control.loop import ControlLoop
from peakgate.control.loop_metrics import AutoscaleMetrics
from peakgate.control.loop_settings import ProviderKind
from peakgate.control.policies import build_policy
from peakgate.control.providers import build_provider
from peakgate.control.providers.base import ScalingProvider
from peakgate.control.signals import ClusterSignals, class_streams
from peakgate.control.signals_gpu import GpuProbe, open_gpu_probe
from peakgate.control.signals_prom import GatewayScraper
from peakgate.control.signals_redis import RedisControl
from peakgate.control.trough_publish import ExpiringWriter, TroughPublisher
from peakgate.control.warm import WarmPool
from peakgate.control.warm_timing import StartupTimer
from peakgate.errors import ConfigError
from peakgate.jobs.offpeak import offpeak_key
from peakgate.scaleout.wall import SystemWallClock, WallClock

_log = logging.getLogger(__name__)


def run_autoscale(config_path: Path | None, provider: ProviderKind | None) -> int:
    settings = load_settings(config_path)
    if provider is not None:
        autoscale = settings.autoscale.model_copy(update={"provider": provider})
        settings = settings.model_copy(update={"autoscale": autoscale})
    if settings.queue.backend != "redis":
        raise ConfigError('peakgate autoscale needs the shared queue: set [queue] backend = "redis"')
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per scrape would bury the decisions
    return asyncio.run(_autoscale(settings, config_path))


def build_loop(settings: Settings, *, redis: RedisControl, http: httpx.AsyncClient, gpu: GpuProbe,
               provider: ScalingProvider, clock: Clock, wall: WallClock, metrics: AutoscaleMetrics) -> ControlLoop:
    """The loop and its parts, from `settings.autoscale` (the policy and forecaster keyed by their `kind`)."""
    config = settings.autoscale
    timer = StartupTimer(config.startup_prior_s, lambda kind, s: metrics.startup.labels(kind).observe(s))
    signals = ClusterSignals(queue=redis, gateways=GatewayScraper(config.gateways, http, config.signal_window_s),
                             gpu=gpu, streams=class_streams(settings.queue.stream_prefix,
                                                            (m.name for m in settings.models)), clock=clock)
    warm = WarmPool(redis, timer, clock, wall) if config.warm.max_replicas or config.warm.replicas else None
    return ControlLoop(config=config, signals=signals, policy=build_policy(config.policy),
                       policy_name=config.policy.kind, provider=provider, beats=redis, warm=warm, timer=timer,
                       clock=clock, wall=wall, metrics=metrics,
                       forecaster=None if config.forecast is None else build_forecaster(config.forecast),
                       observers=tick_observers(settings, redis, wall, metrics))


def tick_observers(settings: Settings, redis: ExpiringWriter, wall: WallClock, metrics: AutoscaleMetrics
                   ) -> list[TickObserver]:
    """The live cost meter, and with a forecaster the off-peak publisher."""
    config = settings.autoscale
    baseline = config.cost.baseline_replicas
    observers: list[TickObserver] = [
        LiveCost(config.cost, config.clamps.min_replicas if baseline is None else baseline,
                 CostMeter(metrics.registry))]
    if config.forecast is not None and config.offpeak.publish:
        observers.append(TroughPublisher(config.offpeak, redis, offpeak_key(settings.queue.stream_prefix),
                                         config.policy.tick_s, wall))
    return observers


async def _autoscale(settings: Settings, config_path: Path | None) -> int:
    config = settings.autoscale
    clock, metrics = MonotonicClock(), AutoscaleMetrics()
    redis = RedisControl.connect(settings.queue)
    gpu = open_gpu_probe()
    try:
        async with httpx.AsyncClient(timeout=config.scrape_timeout_s) as http:
            provider = build_provider(config, config_path, redis, clock)
            try:
                loop = build_loop(settings, redis=redis, http=http, gpu=gpu, provider=provider, clock=clock,
                                  wall=SystemWallClock(), metrics=metrics)
                stop = asyncio.Event()
                for sig in (signal.SIGTERM, signal.SIGINT):
                    asyncio.get_running_loop().add_signal_handler(sig, stop.set)
                _log.info("autoscaling with the %s provider, policy %s, every %.1fs", config.provider,
                          config.policy.kind, config.policy.tick_s)
                with _metrics_server(settings, metrics):
                    await loop.run(stop)
            finally:
                await provider.close()  # the local provider drains its workers
    finally:
        await redis.close()
        gpu.close()
    return 0


@contextlib.contextmanager
def _metrics_server(settings: Settings, metrics: AutoscaleMetrics) -> Iterator[None]:
    port = settings.autoscale.metrics_port
    if port is None:
        yield
        return
    server, thread = start_http_server(port, settings.autoscale.metrics_host, registry=metrics.registry)
    try:
        yield
    finally:
        server.shutdown()
        thread.join(timeout=5)
