"""A real redis-server process on a free 127.0.0.1 port, without persistence, restartable on the same port."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import pytest
import redis

_START_TIMEOUT_S = 5.0


def redis_server_binary() -> str | None:
    return os.environ.get("PEAKGATE_REDIS_SERVER") or shutil.which("redis-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class RedisServer:
    def __init__(self, binary: str, port: int) -> None:
        self.binary = binary
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self._proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + _START_TIMEOUT_S
        with redis.Redis(port=self.port, socket_timeout=0.2, socket_connect_timeout=0.2) as client:
            while True:
                try:
                    if client.ping():
                        return
                except redis.RedisError:
                    pass
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    pytest.fail(f"redis-server on port {self.port} did not answer PING")
                time.sleep(0.01)

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=1)
