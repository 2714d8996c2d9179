"""Shared admission across two real `peakgate serve` gateways (echo engines) and one real redis-server: one
bucket and one quota for both, surviving a gateway restart; with Redis stopped, each gateway limits alone at its
fallback share and says so in /metrics, without hanging, and the shared limits are back once Redis is.

On the `local` backend the first two tests fail: each gateway admits a whole burst and keeps its own quota."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from redis_harness import RedisServer, free_port, redis_server_binary

from bench._http import Server, serve

BURST_KEY, QUOTA_KEY, OUTAGE_KEY = "burst-key", "quota-key", "outage-key"
SEGMENT = "x" * 10  # every request costs 10 characters
SLOW = {"rate_chars_per_s": 0.01, "burst_chars": 100}  # a burst of ten requests, refilling too slowly to matter
RETRY_REDIS_S = 0.3

pytestmark = pytest.mark.slow  # three gateway processes and a Redis restart


def config(redis_url: str, data_dir: Path) -> dict[str, object]:
    return {
        "data_dir": str(data_dir), "log_level": "warning",
        "models": [{"name": "echo-en-es", "engine": "echo", "source": "en", "target": "es"}],
        "tiers": {"medium": ["echo-en-es"]}, "default_tier": "medium",
        "keys": [{"key": BURST_KEY, "tenant": "bursty", **SLOW},
                 {"key": QUOTA_KEY, "tenant": "metered", "quota_chars": 100},
                 {"key": OUTAGE_KEY, "tenant": "steady", "quota_chars": 10_000, **SLOW}],
        "admission": {"backend": "redis", "redis_url": redis_url, "fallback_share": 0.5,
                      "retry_redis_s": RETRY_REDIS_S},
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RedisServer, dict[str, object], Server,
                                                                        Server]]:
    binary = redis_server_binary()
    if binary is None:
        pytest.skip("redis-server not found (.ci/run installs it)")
    redis = RedisServer(binary, free_port())
    redis.start()
    settings = config(redis.url, tmp_path_factory.mktemp("a"))
    try:
        with serve(settings) as a, serve(config(redis.url, tmp_path_factory.mktemp("b"))) as b:
            yield redis, settings, a, b
    finally:
        redis.stop()


def translate(server: Server, key: str) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/translate", json={"segments": [SEGMENT], "source": "en", "target": "es"},
                      headers={"Authorization": f"Bearer {key}"}, timeout=10)


def admitted(servers: list[Server], key: str, attempts: int) -> int:
    """Requests sent round-robin to `servers` until `attempts`; how many got a 200 (the rest must be 429s)."""
    statuses = [translate(servers[i % len(servers)], key).status_code for i in range(attempts)]
    assert set(statuses) <= {200, 429}, statuses
    return statuses.count(200)


def usage(server: Server, key: str) -> int:
    reply = httpx.get(f"{server.url}/v2/usage", headers={"Authorization": f"DeepL-Auth-Key {key}"}, timeout=10)
    assert reply.status_code == 200, reply.text
    count: int = reply.json()["character_count"]
    return count


def metric(server: Server, sample: str) -> float:
    text = httpx.get(f"{server.url}/metrics", timeout=10).text
    found = re.search(rf"^{re.escape(sample)} (\S+)$", text, re.M)
    return float(found.group(1)) if found else 0.0


def test_a_burst_across_both_gateways_is_limited_as_one_bucket(cluster: tuple[RedisServer, dict[str, object],
                                                                                  Server, Server]) -> None:
    _, _, a, b = cluster
    assert admitted([a, b], BURST_KEY, 16) == 10  # local buckets would admit ten on each
    refused = translate(b, BURST_KEY)
    assert refused.status_code == 429 and float(refused.headers["Retry-After"]) > 100


def test_a_quota_spent_on_one_gateway_is_spent_on_the_other_and_after_a_restart(
        cluster: tuple[RedisServer, dict[str, object], Server, Server], tmp_path: Path) -> None:
    redis, _, a, b = cluster
    assert admitted([a], QUOTA_KEY, 6) == 6  # 60 of 100 billed on a
    assert usage(b, QUOTA_KEY) == 60
    assert admitted([b], QUOTA_KEY, 4) == 4
    refused = translate(a, QUOTA_KEY)
    assert refused.status_code == 402 and "100 of 100 used" in refused.text
    with serve(config(redis.url, tmp_path)) as restarted:  # a fresh gateway process: nothing in its memory
        assert usage(restarted, QUOTA_KEY) == 100
        assert translate(restarted, QUOTA_KEY).status_code == 402


def test_with_redis_stopped_each_gateway_limits_at_its_share_and_the_shared_limits_return(
        cluster: tuple[RedisServer, dict[str, object], Server, Server]) -> None:
    redis, _, a, b = cluster
    assert metric(a, "peakgate_admission_fallback") == 0.0
    redis.stop()
    started = time.monotonic()
    assert admitted([a], OUTAGE_KEY, 8) == 5  # half of the burst of 100, at 10 characters a request
    assert admitted([b], OUTAGE_KEY, 8) == 5
    assert time.monotonic() - started < 8.0  # 16 requests, none waiting on a dead Redis for long
    assert usage(a, OUTAGE_KEY) == 50  # its own spend, queued for Redis
    for gateway in (a, b):
        assert metric(gateway, "peakgate_admission_fallback") == 1.0
        assert metric(gateway, 'peakgate_admission_fallback_decisions_total{op="admit"}') >= 8
    redis.start()  # the same port, empty: this harness keeps nothing on disk
    time.sleep(RETRY_REDIS_S + 0.2)
    assert usage(a, OUTAGE_KEY) == 50  # replayed into Redis before anything else
    assert usage(b, OUTAGE_KEY) == 100  # b's replay on top: nothing billed in the outage is lost
    assert metric(a, "peakgate_admission_fallback") == metric(b, "peakgate_admission_fallback") == 0.0
    assert admitted([a, b], OUTAGE_KEY, 14) == 10  # one shared bucket again (a fresh one: Redis was emptied)
