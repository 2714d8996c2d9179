"""Where each dialect carries its API key; checking the key is the service's job."""

from __future__ import annotations

from starlette.requests import Request


def header_key(request: Request, scheme: str) -> str | None:
    """`Authorization: <scheme> KEY`, else `X-API-Key: KEY`; None when neither is sent."""
    given_scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if given_scheme.lower() == scheme.lower() and token.strip():
        return token.strip()
    return request.headers.get("x-api-key") or None
