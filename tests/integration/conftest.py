"""Shared real parts for the integration tests: a throwaway redis-server, and each real en->es engine."""

from __future__ import annotations

import shutil
from collections.abc import AsyncIterator, Iterator

import pytest
from real_engines import Engine
from redis_harness import RedisServer, free_port, redis_server_binary

from peakgate.backends.apertium import MODES_DIR, ApertiumBackend
from peakgate.backends.ctranslate2_backend import CTranslate2Backend
from peakgate.config import REPO_MODELS_DIR

INT8 = REPO_MODELS_DIR / "student-en-es-int8"


@pytest.fixture
def redis_server() -> Iterator[RedisServer]:
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server not found (set PEAKGATE_REDIS_SERVER or put it on PATH)")
    server = RedisServer(binary, free_port())
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _apertium() -> ApertiumBackend:
    if shutil.which("apertium") is None or not (MODES_DIR / "eng-spa.mode").is_file():
        pytest.skip("apertium eng-spa is not installed (.ci/run installs it)")
    return ApertiumBackend("apertium-en-es", "eng-spa", "en", "es", pipelines=1)


def _student() -> CTranslate2Backend:
    if not (INT8 / "model.bin").is_file():
        pytest.skip("the int8 student is not built (peakgate models build)")
    return CTranslate2Backend("student-int8", INT8, "en", "es", compute_type="int8", intra_threads=2)


@pytest.fixture(params=["apertium", "int8"])
async def engine(request: pytest.FixtureRequest) -> AsyncIterator[Engine]:
    """Each real en->es engine in turn, started and closed around the test."""
    backend: Engine = _apertium() if request.param == "apertium" else _student()
    await backend.start()
    yield backend
    await backend.close()
