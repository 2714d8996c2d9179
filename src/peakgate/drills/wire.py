"""The values on the wire: a request by path (the client adds the one origin it was given) and its answer."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    headers: tuple[tuple[str, str], ...]
    body: bytes = b""


@dataclass(frozen=True, slots=True)
class Reply:
    status: int
    headers: dict[str, str]  # lower-cased names
    body: bytes
