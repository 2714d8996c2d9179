"""`peakgate worker`: one worker process, from the config file the gateways use.

The queue settings (`[queue]`) and the models come from that file; `--redis` overrides the URL, `--models`
picks some of the configured models (an unknown name exits 2 before anything starts), `--concurrency` sets
the batches each model runs side by side (default: what `peakgate serve` gives the engine), `--standby` starts
it warm (models loaded, reading nothing until the autoscaler promotes it; see `worker`). SIGTERM or
SIGINT drains the worker (see `worker`) and the process exits 0, or 1 if its engines never became ready.
`--metrics-port` (or `queue.worker_metrics_port`) serves the worker's /metrics for Prometheus.
"""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import signal
import socket
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from peakgate.backends.factory import build_backend
from peakgate.clock import MonotonicClock
from peakgate.config import ModelConfig, Settings, load_settings
from peakgate.errors import BadRequest, ConfigError
from peakgate.scaleout.redis_streams import RedisStreams
from peakgate.scaleout.settings import QueueConfig
from peakgate.scaleout.wall import SystemWallClock
from peakgate.scaleout.worker import Worker
from peakgate.scaleout.worker_metrics import WorkerCollector, serve_worker_metrics
from peakgate.scheduling.concurrency import worker_count

_log = logging.getLogger(__name__)
_STUCK_MARGIN_S = 5.0


def run_worker(config: Path | None, redis_url: str | None, models: Sequence[str] | None,
               concurrency: int | None, standby: bool = False, *, metrics_port: int | None = None) -> int:
    settings = load_settings(config)
    chosen = select_models(settings, models)
    if concurrency is not None and concurrency < 1:
        raise BadRequest(f"--concurrency must be at least 1, not {concurrency}")
    if metrics_port is not None and not 0 <= metrics_port <= 65_535:
        raise BadRequest(f"--metrics-port must be a port number (0 picks a free one), not {metrics_port}")
    overrides = {k: v for k, v in (("redis_url", redis_url), ("worker_metrics_port", metrics_port)) if v is not None}
    queue = settings.queue.model_copy(update=overrides)
    logging.basicConfig(level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return asyncio.run(_serve(settings, queue, chosen, concurrency, standby))


def select_models(settings: Settings, names: Sequence[str] | None) -> tuple[ModelConfig, ...]:
    """The configured models named (all of them when none are), or `BadRequest` naming the unknown ones."""
    if not names:
        if not settings.models:
            raise ConfigError("the config names no models for this worker to serve")
        return settings.models
    unknown = [name for name in names if settings.model(name) is None]
    if unknown:
        known = ", ".join(m.name for m in settings.models) or "none"
        raise BadRequest(f"unknown model {', '.join(repr(n) for n in unknown)}; the config has: {known}")
    return tuple(m for m in settings.models if m.name in names)


async def _serve(settings: Settings, queue: QueueConfig, models: Sequence[ModelConfig],
                 concurrency: int | None, standby: bool) -> int:
    clock = MonotonicClock()
    worker_id = f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:4]}"
    worker = Worker(
        config=queue, batcher=settings.batcher, classes=settings.classes,
        backends={m.name: build_backend(m, settings.models_dir) for m in models},
        concurrency={m.name: concurrency or worker_count(m) for m in models},
        transport=RedisStreams.connect(queue, worker_id), clock=clock, wall=SystemWallClock(),
        worker_id=worker_id, grace_s=settings.shutdown_grace_s, standby=standby,
    )
    loop = asyncio.get_running_loop()

    def stop() -> None:
        worker.stop()
        # A drain ends within its grace: past that and a margin, say where shutdown is stuck before a kill, from
        # the loop (its tasks) and, should the loop itself be blocked, from faulthandler's thread (every stack).
        stuck_s = settings.shutdown_grace_s + _STUCK_MARGIN_S
        clock.call_at(clock.now() + stuck_s, _log_stuck_tasks)
        faulthandler.dump_traceback_later(stuck_s + 1.0, exit=False)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    stop_metrics = _metrics(worker, queue)
    _log.info("worker %s %s %s", worker_id, "standing by for" if standby else "serving",
              ", ".join(m.name for m in models))
    try:
        code = await worker.run()
    finally:
        faulthandler.cancel_dump_traceback_later()
        stop_metrics()
    _log.info("worker %s stopped (%s)", worker_id, worker.counts)
    return code


def _metrics(worker: Worker, queue: QueueConfig) -> Callable[[], None]:
    if queue.worker_metrics_port is None:
        return lambda: None
    collector = WorkerCollector(worker.worker_id, worker.state)
    port, stop = serve_worker_metrics(worker.metrics, collector, queue.worker_metrics_host, queue.worker_metrics_port)
    # The port on a line of its own: a supervisor (or a test) that asked for a free port reads it here.
    _log.info("worker %s metrics on http://%s:%d/metrics", worker.worker_id, queue.worker_metrics_host, port)
    return stop


def _log_stuck_tasks() -> None:
    tasks = [t for t in asyncio.all_tasks() if not t.done()]
    _log.error("shutdown still running past its grace; %d tasks pending:", len(tasks))
    for task in tasks:
        frames = task.get_stack(limit=8)
        where = " <- ".join(f"{f.f_code.co_filename.rpartition('/')[2]}:{f.f_lineno} {f.f_code.co_name}"
                            for f in reversed(frames))
        _log.error("  %s: %s", task.get_name(), where or "(not started)")
