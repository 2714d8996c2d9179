"""Open dev mode made visible: with no API keys configured, every HTTP response carries
`X-Peakgate-Auth: open-dev-mode`, so a client that sent a key can tell that nothing checked it.

With `auth.refuse_deepl_like_keys_in_open_mode`, a request whose header key (`Authorization: <scheme> KEY`,
`X-API-Key`) or `auth_key` query parameter is shaped like a real DeepL key is refused with the dialect's
authorization error (DeepL: 403, which its SDKs raise as `AuthorizationException`): such a client almost
certainly meant DeepL's servers, or expects a key check. A key sent only in a form or JSON body is not
looked at here (reading the body belongs to the handlers).
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import parse_qs

from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from peakgate.admission.keys import looks_like_deepl_key

OPEN_MODE_HEADER = "X-Peakgate-Auth"
OPEN_MODE_VALUE = "open-dev-mode"
REFUSED_MESSAGE = ("this server runs in open dev mode and does not check API keys; it refuses keys shaped like "
                   "DeepL keys (auth.refuse_deepl_like_keys_in_open_mode): is the client pointed at the right server?")
ErrorFor = Callable[[str, str], Response]  # (request path, message) -> that path's dialect's 403/401


def sent_keys(scope: Scope) -> list[str]:
    """Every key the request carries outside its body."""
    headers = Headers(scope=scope)
    _scheme, _, token = headers.get("authorization", "").partition(" ")
    keys = [key.strip() for key in (token, headers.get("x-api-key", "")) if key.strip()]
    return keys + parse_qs(scope.get("query_string", b"").decode("latin-1")).get("auth_key", [])


class OpenModeEdge:
    """ASGI middleware, installed only in open dev mode."""

    def __init__(self, app: ASGIApp, *, refuse_deepl_like_keys: bool, error_for: ErrorFor) -> None:
        self._app = app
        self._refuse = refuse_deepl_like_keys
        self._error_for = error_for

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def marked(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = [*message.get("headers", []), (OPEN_MODE_HEADER.lower().encode(), OPEN_MODE_VALUE.encode())]
                message = {**message, "headers": headers}
            await send(message)

        if self._refuse and any(looks_like_deepl_key(key) for key in sent_keys(scope)):
            await self._error_for(str(scope["path"]), REFUSED_MESSAGE)(scope, receive, marked)
            return
        await self._app(scope, receive, marked)
