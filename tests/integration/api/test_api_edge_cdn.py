"""A real caching proxy (nginx's proxy_cache, standing in for a CDN) in front of `peakgate serve`: repeats of
GET /v1/translate are served without reaching peakgate (its request counter does not move), another key never
gets the cached copy, and an expired copy is revalidated with If-None-Match (peakgate answers 304).

The nginx configuration is the one docs/edge-caching.md shows. Skipped where nginx is not installed
(`apt-get install nginx-light`).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from bench._http import Server, free_port, serve

NGINX = shutil.which("nginx") or shutil.which("nginx", path="/usr/sbin")  # sbin is off a user's PATH
KEY, OTHER_KEY = "cdn-key", "other-key"
MAX_AGE_S = 1
CONFIG: dict[str, object] = {
    "models": [{"name": "echo-en-es", "engine": "echo", "source": "en", "target": "es"}],
    "tiers": {"medium": ["echo-en-es"]},
    "keys": [{"key": KEY, "tenant": "site"}, {"key": OTHER_KEY, "tenant": "site"}],
    "edge_cache": {"default": {"private_keys": "shared", "max_age_s": MAX_AGE_S, "stale_while_revalidate_s": 0}},
}
QUERY = {"text": "Save the file", "source": "en", "target": "es"}
NGINX_CONF = """
{user}
worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log;
events {{}}
http {{
  access_log off;
  client_body_temp_path {dir}/body;
  proxy_temp_path {dir}/proxy;
  proxy_cache_path {dir}/cache keys_zone=edge:1m;
  server {{
    listen 127.0.0.1:{port};
    location = /v1/translate {{
      proxy_pass {upstream};
      proxy_cache edge;
      proxy_cache_key "$request_method$request_uri|$http_authorization|$http_x_api_key";
      proxy_cache_revalidate on;
      add_header X-Cache $upstream_cache_status always;
    }}
  }}
}}
"""


@pytest.fixture(scope="module")
def origin() -> Iterator[Server]:
    with serve(CONFIG) as running:
        yield running


@pytest.fixture(scope="module")
def cdn(origin: Server, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if NGINX is None:
        pytest.skip("nginx not found (apt-get install nginx-light)")
    folder: Path = tmp_path_factory.mktemp("nginx")
    port = free_port()
    user = "user root;" if os.geteuid() == 0 else ""  # workers must reach the cache under a private tmp dir
    conf = folder / "nginx.conf"
    conf.write_text(NGINX_CONF.format(user=user, dir=folder, port=port, upstream=origin.url))
    proc = subprocess.Popen([NGINX, "-c", str(conf), "-e", str(folder / "error.log")],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_for(url, proc)
        yield url
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _wait_for(url: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"nginx exited with {proc.returncode}")
        try:
            httpx.get(f"{url}/v1/translate", timeout=1.0)
            return
        except httpx.TransportError:
            time.sleep(0.05)
    raise RuntimeError("nginx did not start listening within 10 s")


def origin_answers(origin: Server) -> dict[str, float]:
    """GET and POST /v1/translate answers peakgate served, by status."""
    text = httpx.get(f"{origin.url}/metrics").text
    found = re.findall(r'peakgate_requests_total\{endpoint="/v1/translate",status="(\d+)",[^}]*\} (\S+)', text)
    return {status: float(count) for status, count in found}


def via(cdn: str, key: str | None) -> httpx.Response:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.get(f"{cdn}/v1/translate", params=QUERY, headers=headers)


def test_cdn_serves_repeats_without_reaching_peakgate_and_revalidates(origin: Server, cdn: str) -> None:
    first = via(cdn, KEY)
    assert (first.status_code, first.headers["x-cache"]) == (200, "MISS")
    before = origin_answers(origin)
    repeats = [via(cdn, KEY) for _ in range(5)]
    assert {(r.status_code, r.headers["x-cache"]) for r in repeats} == {(200, "HIT")}
    assert {r.content for r in repeats} == {first.content}
    assert origin_answers(origin) == before  # not one of them reached peakgate
    other = via(cdn, OTHER_KEY)  # same tenant, other key: its own copy, fetched (and authorised) upstream
    assert other.headers["x-cache"] == "MISS"
    assert via(cdn, None).status_code == 401  # no key: never the cached copy
    time.sleep(MAX_AGE_S + 1.1)  # nginx counts expiry in whole seconds: stale only past the next one
    revalidated = via(cdn, KEY)
    assert (revalidated.status_code, revalidated.headers["x-cache"]) == (200, "REVALIDATED")
    assert revalidated.content == first.content
    assert origin_answers(origin).get("304", 0.0) == before.get("304", 0.0) + 1
