"""The one-origin client: paths only, keep-alive, chunked bodies, and nothing but the target's host and port."""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator

import pytest

from peakgate.drills.http import Connector, Origin, OriginClient, ProtocolError, Streams
from peakgate.drills.wire import Call
from peakgate.errors import ConfigError, PeakgateError

REPLIES = {
    b"/plain": b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nRetry-After: 2\r\n\r\nhello",
    b"/chunked": b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=y\r\nde\r\n0\r\n\r\n",
    b"/close": b"HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
    b"/garbage": b"SMTP ready\r\n\r\n",
}


@pytest.fixture
async def server() -> AsyncIterator[tuple[Origin, list[bytes]]]:
    seen: list[bytes] = []

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while request_line := await reader.readline():
            length = 0
            while (line := await reader.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            await reader.readexactly(length)
            path = request_line.split()[1]
            seen.append(request_line.strip())
            writer.write(REPLIES[path])
            await writer.drain()
            if path in (b"/close", b"/garbage"):
                break
        writer.close()

    listener = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = listener.sockets[0].getsockname()[1]
    async with listener:
        yield Origin.parse(f"http://127.0.0.1:{port}"), seen


def _recording(opened: list[tuple[str, int]]) -> Connector:
    async def connect(host: str, port: int, context: ssl.SSLContext | None) -> Streams:
        opened.append((host, port))
        return await asyncio.open_connection(host, port, ssl=context)
    return connect


async def test_replies_keep_alive_and_only_the_origin_is_dialled(server: tuple[Origin, list[bytes]]) -> None:
    origin, seen = server
    opened: list[tuple[str, int]] = []
    client = OriginClient(origin, connect=_recording(opened))
    plain = await client.send(Call("GET", "/plain", ()), 5)
    chunked = await client.send(Call("POST", "/chunked", (("Content-Type", "text/plain"),), b"body"), 5)
    assert (plain.status, plain.body, plain.headers["retry-after"]) == (200, b"hello", "2")
    assert chunked.body == b"abcde"
    assert opened == [(origin.host, origin.port)]  # one kept-alive connection served both
    closing = await client.send(Call("GET", "/close", ()), 5)
    await client.send(Call("GET", "/plain", ()), 5)
    assert closing.status == 503 and len(opened) == 2  # `Connection: close` is honoured
    assert seen == [b"GET /plain HTTP/1.1", b"POST /chunked HTTP/1.1", b"GET /close HTTP/1.1", b"GET /plain HTTP/1.1"]
    await client.close()


@pytest.mark.parametrize("path", ["http://evil.example/x", "//evil.example/x", "evil", ""])
async def test_anything_but_a_path_is_refused_before_dialling(path: str) -> None:
    opened: list[tuple[str, int]] = []
    client = OriginClient(Origin.parse("http://127.0.0.1:9"), connect=_recording(opened))
    with pytest.raises(ValueError, match="not a path"):
        await client.send(Call("GET", path, ()), 1)
    assert opened == []


async def test_a_non_http_answer_is_an_error(server: tuple[Origin, list[bytes]]) -> None:
    client = OriginClient(server[0])
    with pytest.raises(ProtocolError) as caught:
        await client.send(Call("GET", "/garbage", ()), 5)
    assert isinstance(caught.value, PeakgateError)


@pytest.mark.parametrize(("url", "origin"), [
    ("http://127.0.0.1:8080", Origin("http", "127.0.0.1", 8080)),
    ("http://localhost/", Origin("http", "localhost", 80)),
    ("https://gw.example.com", Origin("https", "gw.example.com", 443)),
])
def test_origin_parse(url: str, origin: Origin) -> None:
    assert Origin.parse(url) == origin


@pytest.mark.parametrize("url", ["ftp://host", "127.0.0.1:8080", "http://host/v2/translate", "http://h?x=1",
                                 "http://user@host", "http://"])
def test_origin_refuses_anything_but_an_origin(url: str) -> None:
    with pytest.raises(ConfigError, match="--target"):
        Origin.parse(url)
