"""A real, throwaway redis-server per test (see redis_harness)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from redis_harness import RedisServer, free_port, redis_server_binary


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
