"""Partial then final on the real engines: `peakgate serve` as a subprocess, Apertium ("tiny") answering
first, the CTranslate2 student ("medium") completing, over httpx SSE streaming and a real websocket client.

The two tiers race: on a short sentence the student is sometimes as quick as Apertium, and then the server
rightly skips the partial. So each try uses a fresh tenant (no cache hit from an earlier try), every try must
end with the student's final, and at least one must show Apertium's partial first.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import ClientConnection, connect

from bench._http import Server, serve

TRIES = 10
KEYS = [f"stream-key-{i}" for i in range(2 * TRIES + 1)]
BODY = {"segments": ["Save the document"], "source": "en", "target": "es"}
TIMEOUT_S = 30.0


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir: Path = tmp_path_factory.mktemp("stream-data")
    config: dict[str, object] = {
        "data_dir": str(data_dir),
        "keys": [{"key": key, "tenant": f"tenant-{i}", "priority_class": "interactive"} for i, key in enumerate(KEYS)],
    }
    with serve(config) as running:
        yield running


def apertium_text(server: Server) -> str:
    reply = httpx.post(f"{server.url}/v1/translate", headers={"Authorization": f"Bearer {KEYS[-1]}"},
                       json={**BODY, "model": "apertium-en-es"}, timeout=TIMEOUT_S)
    assert reply.status_code == 200
    return str(reply.json()["translations"][0]["text"])


def sse_events(server: Server, key: str) -> list[tuple[str, dict[str, Any]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    with httpx.stream("POST", f"{server.url}/v1/translate/stream", json=BODY,
                      headers={"Authorization": f"Bearer {key}"}, timeout=TIMEOUT_S) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in reply.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                events.append((name, json.loads(line.removeprefix("data: "))))
    return events


def check_partial_then_final(tries: Callable[[str], list[tuple[str, dict[str, Any]]]], keys: list[str],
                             expected_partial: str) -> None:
    partials = 0
    for key in keys:
        events = [(name, data) for name, data in tries(key) if name != "done"]
        final = events[-1][1]
        assert (events[-1][0], final["tier"], final["final"]) == ("final", "medium", True)
        assert final["translations"][0]["model"] == "student-en-es-int8"
        assert "degraded" not in final
        assert final["billed_characters"] == len("Save the document")
        if len(events) == 2:
            partial = events[0][1]
            assert (events[0][0], partial["tier"], partial["final"]) == ("partial", "tiny", False)
            assert partial["translations"][0]["model"] == "apertium-en-es"
            assert partial["translations"][0]["text"] == expected_partial
            partials += 1
        if partials >= 1:
            return
    pytest.fail(f"Apertium's partial came first in only {partials} of {len(keys)} tries")


def test_sse_streams_apertium_then_the_student(server: Server) -> None:
    expected = apertium_text(server)
    assert "documento" in expected.lower()

    def one_try(key: str) -> list[tuple[str, dict[str, Any]]]:
        events = sse_events(server, key)
        assert events[-1] == ("done", {})
        return events

    check_partial_then_final(one_try, KEYS[:TRIES], expected)


def ws_connect(server: Server, query: str = "", headers: dict[str, str] | None = None) -> ClientConnection:
    url = server.url.replace("http://", "ws://") + "/v1/translate/ws" + query
    return connect(url, additional_headers=headers, open_timeout=TIMEOUT_S, close_timeout=5)


def ws_request(ws: ClientConnection, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    ws.send(json.dumps(body))
    messages: list[tuple[str, dict[str, Any]]] = []
    while not messages or messages[-1][0] not in ("final", "error"):
        message = json.loads(ws.recv(timeout=TIMEOUT_S))
        messages.append((message["type"], message))
    return messages


def test_websocket_streams_apertium_then_the_student(server: Server) -> None:
    expected = apertium_text(server)

    def one_try(key: str) -> list[tuple[str, dict[str, Any]]]:
        with ws_connect(server, f"?api_key={key}") as ws:
            return ws_request(ws, BODY)

    check_partial_then_final(one_try, KEYS[TRIES:2 * TRIES], expected)


def test_websocket_serves_several_requests_and_survives_bad_json(server: Server) -> None:
    with ws_connect(server, headers={"Authorization": f"Bearer {KEYS[-1]}"}) as ws:
        first = ws_request(ws, BODY)
        ws.send("{not json")
        error = json.loads(ws.recv(timeout=TIMEOUT_S))
        second = ws_request(ws, {**BODY, "segments": ["Open the file"]})
    assert first[-1][0] == "final"
    assert (error["type"], error["code"]) == ("error", "bad_request")
    assert second[-1][0] == "final"
    assert {"archivo", "fichero"} & set(second[-1][1]["translations"][0]["text"].lower().split())


def test_websocket_closes_on_a_bad_key(server: Server) -> None:
    with ws_connect(server, "?api_key=not-a-key") as ws, pytest.raises(ConnectionClosed) as closed:
        ws.recv(timeout=TIMEOUT_S)
    assert closed.value.rcvd is not None
    assert closed.value.rcvd.code == 4401


def test_sse_errors_before_the_stream_are_json(server: Server) -> None:
    reply = httpx.post(f"{server.url}/v1/translate/stream", headers={"Authorization": f"Bearer {KEYS[-1]}"},
                       json={**BODY, "target": "xx"}, timeout=TIMEOUT_S)
    assert reply.status_code == 400
    assert reply.headers["content-type"] == "application/json"
    assert "xx" in reply.json()["error"]["message"]
