"""Queue settings and the factory: the in-process scheduler stays the default; Redis only when configured."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from peakgate.clock import FakeClock
from peakgate.config import ModelConfig, Settings
from peakgate.errors import BadRequest, ConfigError
from peakgate.observe.metrics import Metrics
from peakgate.scaleout.gateway import RedisWorkQueue
from peakgate.scaleout.process import select_models
from peakgate.scaleout.settings import QueueConfig
from peakgate.scheduling import Scheduler
from peakgate.scheduling.work_queue import build_work_queue

MODELS = (ModelConfig(name="a", engine="echo", source="en", target="es"),
          ModelConfig(name="b", engine="echo", source="es", target="en"))


def test_the_embedded_default_is_the_in_process_scheduler() -> None:
    settings = Settings(models=MODELS)
    assert settings.queue.backend == "inprocess"
    queue = build_work_queue(settings, {}, FakeClock(), Metrics(), {})
    assert type(queue) is Scheduler


@pytest.mark.parametrize("fallback", ["none", "local"])
def test_the_redis_backend_builds_the_gateway_queue_without_connecting(fallback: str) -> None:
    settings = Settings(models=MODELS, queue={"backend": "redis", "redis_url": "redis://127.0.0.1:1/0",
                                              "fallback": fallback})
    queue = build_work_queue(settings, {}, FakeClock(), Metrics(), {})
    assert isinstance(queue, RedisWorkQueue)


def test_a_bad_redis_url_is_a_config_error() -> None:
    settings = Settings(models=MODELS, queue={"backend": "redis", "redis_url": "http://nope"})
    with pytest.raises(ConfigError, match="redis_url"):
        build_work_queue(settings, {}, FakeClock(), Metrics(), {})


def test_a_live_worker_must_refresh_its_leases_well_within_the_claim_idle_time() -> None:
    with pytest.raises(ValidationError, match="two heartbeats"):
        QueueConfig(claim_idle_ms=1_500, heartbeat_s=1.0)
    with pytest.raises(ValidationError, match="read_block_ms"):
        QueueConfig(read_block_ms=1_000, socket_timeout_ms=1_000)
    assert QueueConfig(heartbeat_s=0.5, heartbeat_misses=4).heartbeat_ttl_ms == 2_000


def test_a_worker_serves_the_named_models_or_all_of_them() -> None:
    settings = Settings(models=MODELS)
    assert select_models(settings, None) == MODELS
    assert select_models(settings, ["b"]) == (MODELS[1],)


def test_a_worker_for_an_unknown_model_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(BadRequest, match=r"unknown model 'nope'; the config has: a, b"):
        select_models(Settings(models=MODELS), ["a", "nope"])
    with pytest.raises(ConfigError, match="no models"):
        select_models(Settings(), None)
