"""Fault injection on the real server process and real engines: nothing hangs, nothing accepted is lost.

- an Apertium pipeline killed mid-request: restarted, the batch retried, the request answered;
- the server killed (SIGKILL) with a batch job in flight: restarted on the same data directory, the job resumes
  and completes with every segment;
- Redis gone: requests are still served (L1 and engines) and the cache errors are counted;
- queues full: 429/503 with Retry-After, never a hang.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import signal
import time
from pathlib import Path

import httpx
from openai_stub import running_stub
from redis_harness import RedisServer

from bench._http import Server, serve

APERTIUM_ONLY: dict[str, object] = {
    "models": [{"name": "apertium-en-es", "engine": "apertium", "source": "en", "target": "es", "mode": "eng-spa"}],
    "tiers": {"tiny": ["apertium-en-es"]}, "default_tier": "tiny",
}


def descendants(pid: int) -> list[int]:
    found: list[int] = []
    todo = [pid]
    while todo:
        parent = todo.pop()
        for task in Path(f"/proc/{parent}/task").iterdir():
            children = (task / "children").read_text().split()
            found += [int(c) for c in children]
            todo += [int(c) for c in children]
    return found


def command(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return ""


def post(server: Server, path: str, body: dict[str, object], timeout: float = 30.0) -> httpx.Response:
    return httpx.post(f"{server.url}{path}", json=body, timeout=timeout)


def test_killed_apertium_pipeline_is_restarted_and_the_request_answered() -> None:
    sentences = [f"The printer number {i} is out of paper." for i in range(200)]
    with serve(APERTIUM_ONLY) as server:
        assert post(server, "/v1/translate", {"segments": ["Warm up."], "source": "en", "target": "es"}).is_success
        stages = [p for p in descendants(server.proc.pid) if "apertium" in command(p) or "lt-proc" in command(p)]
        assert stages, "no apertium pipeline processes found under the server"
        with concurrent.futures.ThreadPoolExecutor(4) as pool:
            body = {"source": "en", "target": "es"}
            replies = [pool.submit(post, server, "/v1/translate", body | {"segments": sentences[i : i + 50]})
                       for i in range(0, len(sentences), 50)]
            time.sleep(0.05)  # the batches are running: kill the pipelines under them
            for pid in stages:
                os.kill(pid, signal.SIGKILL)
            answered = [r.result(timeout=60) for r in replies]
        assert all(r.status_code == 200 for r in answered), [r.text for r in answered]
        reply = answered[-1]
        assert all("impresora" in t["text"] for t in reply.json()["translations"])


def test_a_batch_job_survives_a_server_kill(tmp_path: Path) -> None:
    segments = [f"Copy {i} files to the folder." for i in range(3000)]
    config = APERTIUM_ONLY | {"data_dir": str(tmp_path), "jobs": {"chunk_segments": 50}}
    with serve(config) as first:
        created = post(first, "/v1/jobs", {"segments": segments, "source": "en", "target": "es"})
        assert created.status_code == 202, created.text
        job_id = created.json()["job_id"]
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # kill it part-way, after some chunks were committed
            done = httpx.get(f"{first.url}/v1/jobs/{job_id}", timeout=5).json()["segments_done"]
            if done > 0:
                break
            time.sleep(0.02)
        first.proc.send_signal(signal.SIGKILL)
        first.proc.wait(timeout=10)
    assert 0 < done < len(segments), f"kill landed at {done} of {len(segments)}: enlarge the job"
    with serve(config) as second:
        deadline = time.monotonic() + 120
        status: dict[str, object] = {}
        while time.monotonic() < deadline:
            status = httpx.get(f"{second.url}/v1/jobs/{job_id}", timeout=5).json()
            if status["status"] in ("done", "error"):
                break
            time.sleep(0.2)
    assert status["status"] == "done", status
    translations = status["translations"]
    assert isinstance(translations, list) and len(translations) == len(segments)
    assert all(f"{i}" in t and "carpeta" in t for i, t in enumerate(translations))


def test_redis_gone_requests_still_served_and_errors_counted(redis_server: RedisServer) -> None:
    redis = redis_server
    config = APERTIUM_ONLY | {"cache": {"backend": "redis", "redis_url": redis.url}}
    with serve(config) as server:
        body = {"segments": ["Open the file."], "source": "en", "target": "es"}
        assert post(server, "/v1/translate", body).is_success
        redis.stop()
        for text in ("Open the file.", "Close the window.", "Print the page."):
            reply = post(server, "/v1/translate", {**body, "segments": [text]})
            assert reply.status_code == 200, reply.text
        metrics = httpx.get(f"{server.url}/metrics").text
    errors = [line for line in metrics.splitlines()
              if line.startswith("peakgate_cache_errors_total{") and 'layer="redis"' in line]
    assert errors and any(float(line.rsplit(" ", 1)[1]) > 0 for line in errors), errors


def test_full_queue_answers_with_retry_after_not_a_hang() -> None:
    config = {"batcher": {"max_queue_len": 64}}  # the default models: the student is slow enough to back up
    def body(n: int) -> dict[str, object]:  # distinct texts: nothing served by the cache or coalesced
        return {"segments": [f"Sentence {i} of long document {n}." for i in range(30)], "source": "en",
                "target": "es", "priority": "batch"}

    with (serve(config) as server, httpx.Client(base_url=server.url, timeout=30) as client,
          concurrent.futures.ThreadPoolExecutor(16) as pool):
        replies = list(pool.map(lambda n: client.post("/v1/translate", json=body(n)), range(32)))
    statuses = {r.status_code for r in replies}
    assert 200 in statuses
    refused = [r for r in replies if r.status_code in (429, 503)]
    assert refused, statuses
    assert all(float(r.headers["Retry-After"]) >= 1 for r in refused)
    assert all(json.loads(r.content)["error"]["message"] for r in refused)
    assert statuses <= {200, 429, 503}


def breaker_state(server: Server, model: str) -> float | None:
    for line in httpx.get(f"{server.url}/metrics").text.splitlines():
        if line.startswith(f'peakgate_breaker_state{{model="{model}"}}'):
            return float(line.rsplit(" ", 1)[1])
    return None


def test_failing_upstream_opens_its_breaker_falls_back_and_recovers() -> None:
    with running_stub() as stub:
        config = {
            "models": [
                {"name": "llm", "engine": "openai", "source": "en", "target": "es", "base_url": stub.base_url,
                 "api_key": "k", "upstream_model": "stub-ok", "timeout_s": 2.0},
                APERTIUM_ONLY["models"][0],  # type: ignore[index]
            ],
            "tiers": {"large": ["llm", "apertium-en-es"]}, "default_tier": "large",
            # The stub echoes English ("ES[...]"): quality fallback would move segments off it; this test is about
            # the breaker, so only failures may move them.
            "quality": {"enabled": False},
            "resilience": {"breaker": {"window_kind": "count", "window_size": 4, "min_requests": 4, "open_s": 1.0,
                                       "max_open_s": 1.0, "half_open_probes": 1}},
        }
        with serve(config) as server:
            def served_by(text: str) -> str:
                reply = post(server, "/v1/translate", {"segments": [text], "source": "en", "target": "es"})
                assert reply.status_code == 200, reply.text
                return str(reply.json()["translations"][0]["model"])

            assert served_by("Open the file.") == "llm"
            stub.failing = True
            assert all(served_by(f"Close window {i}.") == "apertium-en-es" for i in range(4))  # fallback serves
            assert breaker_state(server, "llm") == 2.0  # open
            calls = len(stub.requests)
            assert served_by("Print the page.") == "apertium-en-es"
            assert len(stub.requests) == calls  # open: the upstream is not even called
            stub.failing = False
            time.sleep(1.2)  # open_s passes: the next call is a half-open probe, which succeeds
            assert served_by("Save the file.") == "llm"
            assert breaker_state(server, "llm") == 0.0
