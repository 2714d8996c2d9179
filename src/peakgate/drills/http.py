"""A small keep-alive HTTP/1.1 client bound to one origin: the surge tester's only way out.

It is given the target URL once and then accepts request *paths* only, so nothing it sends can reach another
host: no absolute URLs, no redirects followed, ids from the server are quoted into a path segment by the caller.
It is also cheap (a prepared request, a Content-Length or chunked body), because the generator shares the
machine with the server it measures: httpx costs several ms of CPU per request, which would cap the offered load
at the client's speed (bench/_http.py measured the same).
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urlsplit

from peakgate.drills.wire import Call, Reply
from peakgate.errors import ConfigError, PeakgateError

Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]
Connector = Callable[[str, int, ssl.SSLContext | None], Awaitable[Streams]]
_MAX_HEADER_LINES = 100
_MAX_CHUNKS = 100_000  # far past any answer of this API; a bound, not a limit anyone meets


@dataclass(frozen=True, slots=True)
class Origin:
    scheme: str
    host: str
    port: int

    @classmethod
    def parse(cls, url: str) -> Origin:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigError(f"--target {url!r}: need an http:// or https:// URL with a host")
        if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
            raise ConfigError(f"--target {url!r}: give the server's origin only (scheme, host, port)")
        return cls(parts.scheme, parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))

    @property
    def url(self) -> str:
        return f"{self.scheme}://{self.host}:{self.port}"


class ProtocolError(PeakgateError):
    """The server's answer was not HTTP/1.1 this client understands."""

    code = "protocol_error"


async def _open(host: str, port: int, context: ssl.SSLContext | None) -> Streams:
    return await asyncio.open_connection(host, port, ssl=context)


class OriginClient:
    def __init__(self, origin: Origin, connect: Connector = _open) -> None:
        self.origin = origin
        self._connect = connect
        self._ssl = ssl.create_default_context() if origin.scheme == "https" else None
        self._idle: list[Streams] = []
        self._host_header = origin.host if origin.port in (80, 443) else f"{origin.host}:{origin.port}"

    async def send(self, call: Call, timeout_s: float) -> Reply:
        """One exchange; raises TimeoutError, OSError, ProtocolError or asyncio.IncompleteReadError."""
        if not call.path.startswith("/") or call.path.startswith("//"):
            raise ValueError(f"not a path on the target: {call.path!r}")
        streams = self._idle.pop() if self._idle else None
        fresh = streams is None
        async with asyncio.timeout(timeout_s):
            if streams is None:
                streams = await self._connect(self.origin.host, self.origin.port, self._ssl)
            try:
                reply, reusable = await _exchange(streams, self._head(call), call.body)
            except (OSError, ProtocolError, asyncio.IncompleteReadError):
                _close(streams)
                if fresh:
                    raise
                # A kept-alive connection the server had closed: once more on a new one.
                streams = await self._connect(self.origin.host, self.origin.port, self._ssl)
                reply, reusable = await _exchange(streams, self._head(call), call.body)
            except BaseException:
                _close(streams)  # a timeout or cancellation mid-answer: the connection is unusable
                raise
        if reusable:
            self._idle.append(streams)
        else:
            _close(streams)
        return reply

    def _head(self, call: Call) -> bytes:
        lines = [f"{call.method} {call.path} HTTP/1.1", f"Host: {self._host_header}",
                 f"Content-Length: {len(call.body)}"]
        lines.extend(f"{name}: {value}" for name, value in call.headers)
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

    async def close(self) -> None:
        while self._idle:
            _close(self._idle.pop())


def _close(streams: Streams) -> None:
    with contextlib.suppress(Exception):
        streams[1].close()


async def _exchange(streams: Streams, head: bytes, body: bytes) -> tuple[Reply, bool]:
    reader, writer = streams
    writer.write(head + body)
    await writer.drain()
    status_line = await reader.readline()
    parts = status_line.split(maxsplit=2)
    if len(parts) < 2 or not parts[0].startswith(b"HTTP/1.") or not parts[1].isdigit():
        raise ProtocolError(f"bad status line {status_line[:80]!r}")
    headers: dict[str, str] = {}
    for _ in range(_MAX_HEADER_LINES):
        line = await reader.readline()
        if line in (b"\r\n", b"\n", b""):
            break
        name, _, value = line.decode("latin-1").partition(":")
        headers[name.strip().lower()] = value.strip()
    else:
        raise ProtocolError("too many header lines")
    if headers.get("transfer-encoding", "").lower() == "chunked":
        payload = await _chunked(reader)
    else:
        payload = await reader.readexactly(int(headers.get("content-length", "0")))
    reusable = headers.get("connection", "").lower() != "close"
    return Reply(int(parts[1]), headers, payload), reusable


async def _chunked(reader: asyncio.StreamReader) -> bytes:
    chunks: list[bytes] = []
    for _ in range(_MAX_CHUNKS):  # ends at the zero-size chunk
        size_line = await reader.readline()
        try:
            size = int(size_line.split(b";")[0].strip(), 16)
        except ValueError as exc:
            raise ProtocolError(f"bad chunk size {size_line[:40]!r}") from exc
        if size == 0:
            await reader.readline()
            return b"".join(chunks)
        chunks.append(await reader.readexactly(size))
        await reader.readline()
    raise ProtocolError(f"more than {_MAX_CHUNKS} chunks")
