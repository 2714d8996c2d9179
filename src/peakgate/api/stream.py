"""Partial result, then completion: the fast tier's translation at once, the higher tier's when it is ready.

`POST /v1/translate/stream` answers Server-Sent Events (`partial`, `final`, `done`); `/v1/translate/ws` sends
the same events as JSON messages (`{"type": "partial" | "final" | "error", ...}`), several requests per socket.
Both tiers run concurrently, so the final is never queued behind the partial.

Billing: the final is admitted and billed once, through `service.translate`. The partial is a courtesy run
on the trusted path (`service.run`: no admission, no billing), started only after the final's admission
has passed, so a caller over quota or rate gets its normal error and no free translation. A degraded
final (the higher tier failed) was never billed, since the service bills only a translation it delivered.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncGenerator, AsyncIterator, Coroutine
from dataclasses import dataclass, replace
from typing import Any, Protocol, runtime_checkable

import msgspec
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse
from starlette.routing import BaseRoute, WebSocketRoute
from starlette.types import Receive, Scope, Send
from starlette.websockets import WebSocket, WebSocketDisconnect

from peakgate.api.auth import header_key
from peakgate.api.bodies import BodyParser, decode_json, max_body_bytes
from peakgate.api.contract import TranslationService
from peakgate.api.endpoint import NO_TIER, Operation, set_served
from peakgate.api.errors import NATIVE, NativeErrorDetail, status_for
from peakgate.api.native import TranslateBody, TranslationOut, _to_domain
from peakgate.config import PRIORITY_ORDER, ClassConfig, PriorityClass, Settings
from peakgate.domain import Principal, TranslateRequest, TranslateResult
from peakgate.errors import (
    BadRequest,
    DeadlineExceeded,
    InputTooLarge,
    PeakgateError,
    QuotaExceeded,
    RateLimited,
    Unauthorized,
)
from peakgate.routing.router import CHEAP_TIER, QUALITY_HINTS

_log = logging.getLogger(__name__)

SSE = "text/event-stream"
# Past the service's own deadline the higher tier should have failed already; this only backstops a hang.
_GRACE_S = 1.0
# Errors that refuse the request itself: a partial must not stand in for them (it would be unbilled work).
_REFUSALS = (BadRequest, Unauthorized, QuotaExceeded, RateLimited)
WS_POLICY_CLOSE = 4401
WS_PATH = "/v1/translate/ws"


@runtime_checkable
class TrustedRunner(Protocol):
    async def run(self, request: TranslateRequest, principal: Principal, priority: PriorityClass) -> TranslateResult:
        """The pipeline behind admission: no rate limits, no billing (`peakgate.service.Service.run`)."""


class StreamEvent(msgspec.Struct, omit_defaults=True):
    type: str  # partial | final
    translations: list[TranslationOut]
    tier: str
    final: bool
    billed_characters: int | None = None  # on the final only
    degraded: bool = False  # the final repeats the partial: the higher tier failed or missed its deadline
    error: NativeErrorDetail | None = None  # why it degraded


class StreamError(msgspec.Struct):
    message: str
    code: str
    type: str = "error"


@dataclass(frozen=True, slots=True)
class Plan:
    fast: str | None  # None: no partial (same tier as the final, an explicit model, or no trusted path)
    final: str


def plan_tiers(settings: Settings, request: TranslateRequest, trusted: bool) -> Plan:
    """The final tier resolves as the router does; the fast one is "tiny" when configured, else the default."""
    tiers = settings.tiers or {settings.default_tier: ()}
    wanted = request.tier
    if wanted is None:
        final = settings.default_tier
    elif wanted in tiers or wanted not in QUALITY_HINTS:
        final = wanted  # an unknown name goes on to the service, which rejects it with the options
    else:
        final = QUALITY_HINTS[wanted] if QUALITY_HINTS[wanted] in tiers else settings.default_tier
    fast = CHEAP_TIER if CHEAP_TIER in tiers else settings.default_tier
    same = fast == final or request.model is not None  # an explicit model wins over either tier
    return Plan(None if same or not trusted else fast, final)


def _priority(request: TranslateRequest, principal: Principal) -> PriorityClass:
    # As the service ranks it: a request may lower its key's class, never raise it.
    if request.priority is None:
        return principal.priority
    return PRIORITY_ORDER[max(PRIORITY_ORDER.index(request.priority), PRIORITY_ORDER.index(principal.priority))]


def _guard_s(settings: Settings, request: TranslateRequest, priority: PriorityClass) -> float:
    deadline_ms = request.deadline_ms or settings.classes.get(priority, ClassConfig()).deadline_ms
    return deadline_ms / 1000.0 + _GRACE_S


def _event(kind: str, result: TranslateResult, *, billed: bool) -> StreamEvent:
    out = [TranslationOut(t.text, t.detected_source, t.model, t.tier, t.origin, t.tm_score, t.pivot)
           for t in result.translations]
    tier = result.translations[0].tier if result.translations else NO_TIER
    return StreamEvent(kind, out, tier, kind == "final",
                       result.billed_characters if billed else None)


def _degraded(partial: TranslateResult, exc: Exception) -> StreamEvent:
    if not isinstance(exc, PeakgateError):
        _log.error("higher tier failed while streaming", exc_info=exc)
        exc = PeakgateError("internal server error")
    _log.warning("higher tier failed (%s); the final repeats the partial", exc.message)
    event = _event("final", partial, billed=False)
    event.degraded, event.error = True, NativeErrorDetail(exc.code, exc.message)
    return event


def _retrieve(task: asyncio.Task[TranslateResult]) -> None:
    # Marks a failure as seen: a task we stopped waiting for must not log "exception never retrieved".
    if not task.cancelled():
        task.exception()


def _spawn(work: Coroutine[Any, Any, TranslateResult]) -> asyncio.Task[TranslateResult]:
    task = asyncio.ensure_future(work)
    task.add_done_callback(_retrieve)
    return task


def _settled(final: asyncio.Task[TranslateResult]) -> bool:
    """The final answered, or the request was refused: either way a partial has nothing left to add."""
    return final.done() and (final.exception() is None or isinstance(final.exception(), _REFUSALS))


async def _within(task: asyncio.Task[TranslateResult], until: float) -> TranslateResult:
    remaining = max(0.0, until - asyncio.get_running_loop().time())
    done, _ = await asyncio.wait({task}, timeout=remaining)
    if not done:
        raise DeadlineExceeded("the higher tier missed its deadline")
    return task.result()


class Race:
    """One request's two tiers. `events()` raises before its first event when the request fails outright."""

    def __init__(self, service: TranslationService, request: TranslateRequest, principal: Principal,
                 plan: Plan) -> None:
        self._service, self._request, self._principal, self._plan = service, request, principal, plan
        self._priority = _priority(request, principal)
        self._until = 0.0
        self._final: asyncio.Task[TranslateResult] | None = None
        self._fast: asyncio.Task[TranslateResult] | None = None
        self.first: TranslateResult | None = None  # what the first event carries, for the request metrics

    async def events(self) -> AsyncGenerator[StreamEvent, None]:
        self._until = asyncio.get_running_loop().time() + _guard_s(
            self._service.settings, self._request, self._priority)
        try:
            final = self._final = _spawn(self._service.translate(
                replace(self._request, tier=self._plan.final), self._principal))
            await asyncio.sleep(0)  # the final's admission runs first: a refused request gets no partial
            self._fast = self._start_fast(final)
            partial = self.first = await self._partial(final)
            if partial is not None:
                yield _event("partial", partial, billed=False)
            try:
                result = await _within(final, self._until)
                self.first = self.first or result
            except Exception as exc:
                if partial is None:
                    raise  # nothing sent yet: the request fails as /v1/translate would
                yield _degraded(partial, exc)
                return
            yield _event("final", result, billed=True)
        finally:
            for task in (self._final, self._fast):
                if task is not None:
                    task.cancel()  # a no-op once done; else the client left or we stopped waiting

    def _start_fast(self, final: asyncio.Task[TranslateResult]) -> asyncio.Task[TranslateResult] | None:
        if self._plan.fast is None or not isinstance(self._service, TrustedRunner) or _settled(final):
            return None
        request = replace(self._request, tier=self._plan.fast)
        return _spawn(self._service.run(request, self._principal, self._priority))

    async def _partial(self, final: asyncio.Task[TranslateResult]) -> TranslateResult | None:
        """The fast tier's result when it is worth sending, else None."""
        fast = self._fast
        if fast is None:
            return None
        remaining = max(0.0, self._until - asyncio.get_running_loop().time())
        await asyncio.wait({fast, final}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED)
        if not fast.done():
            if not final.done() or _settled(final):
                return None  # the final is here (or refused, or the guard ran out): no partial
            # The higher tier failed: wait for the partial, which the final will then degrade to.
            await asyncio.wait({fast}, timeout=max(0.0, self._until - asyncio.get_running_loop().time()))
        if not fast.done():
            return None
        if fast.exception() is not None:
            _log.warning("fast tier failed; streaming the final only: %s", fast.exception())
            return None
        return fast.result()


def _frame(event: str, data: bytes) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + data + b"\n\n"


class EventStream(StreamingResponse):
    """SSE frames of a started `Race`; closing the events on the way out cancels whatever still runs."""

    def __init__(self, first: StreamEvent, events: AsyncGenerator[StreamEvent, None]) -> None:
        self._events = events
        super().__init__(self._frames(first), media_type=SSE,
                         headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    async def _frames(self, first: StreamEvent) -> AsyncIterator[bytes]:
        yield _frame(first.type, msgspec.json.encode(first))
        async for event in self._events:
            yield _frame(event.type, msgspec.json.encode(event))
        yield _frame("done", b"{}")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)  # Starlette stops the frames when the client leaves
        finally:
            await self._events.aclose()


def stream_operations(service: TranslationService) -> list[Operation]:
    parser = BodyParser(TranslateBody, max_body_bytes(service.settings.limits))
    trusted = isinstance(service, TrustedRunner)

    async def translate_stream(request: Request) -> Response:
        principal = service.authenticate(header_key(request, "Bearer"))
        parsed = _to_domain(await parser.parse(request))
        plan = plan_tiers(service.settings, parsed, trusted)
        race = Race(service, parsed, principal, plan)
        events = race.events()
        first = await anext(events)  # an error before the first event answers JSON, like /v1/translate
        if race.first is not None:
            set_served(request, race.first)
        return EventStream(first, events)

    return [Operation("/v1/translate/stream", ("POST",), translate_stream, NATIVE,
                      "Translate, streaming the fast tier's result first (Server-Sent Events)", TranslateBody,
                      StreamEvent, produces=(SSE,), auth=True)]


def ws_key(ws: WebSocket) -> str | None:
    """`?api_key=` (browsers cannot set headers on an upgrade), else the Bearer / X-API-Key headers."""
    if key := ws.query_params.get("api_key"):
        return key
    scheme, _, token = ws.headers.get("authorization", "").partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    return ws.headers.get("x-api-key") or None


async def _read(ws: WebSocket, inbox: asyncio.Queue[str | bytes]) -> None:
    """Queue the client's messages; returning means the client left."""
    with contextlib.suppress(WebSocketDisconnect):
        while (message := await ws.receive())["type"] != "websocket.disconnect":
            inbox.put_nowait(message.get("text") or message.get("bytes") or "")


async def _unless_gone(work: asyncio.Future[Any], gone: asyncio.Task[None]) -> bool:
    """Wait for `work`; cancel it (and wait for its clean-up) if the client leaves first."""
    await asyncio.wait({work, gone}, return_when=asyncio.FIRST_COMPLETED)
    if work.done():
        return not work.cancelled() and work.exception() is None
    work.cancel()
    await asyncio.wait({work})
    return False


class Session:
    """One socket: requests are answered in order, each with its partial and final messages."""

    def __init__(self, service: TranslationService, ws: WebSocket, principal: Principal) -> None:
        self._service, self._ws, self._principal = service, ws, principal
        self._decoder = msgspec.json.Decoder(TranslateBody, strict=False)
        self._max_bytes = max_body_bytes(service.settings.limits)
        self._trusted = isinstance(service, TrustedRunner)

    async def serve(self) -> None:
        inbox: asyncio.Queue[str | bytes] = asyncio.Queue()
        reader = asyncio.ensure_future(_read(self._ws, inbox))
        try:
            while await _unless_gone(take := asyncio.ensure_future(inbox.get()), reader):
                if not await _unless_gone(asyncio.ensure_future(self.answer(take.result())), reader):
                    return
        finally:
            reader.cancel()

    async def answer(self, text: str | bytes) -> None:
        started, tier = time.perf_counter(), NO_TIER
        try:
            request = self._parse(text)
            plan = plan_tiers(self._service.settings, request, self._trusted)
            tier = plan.final
            async with contextlib.aclosing(Race(self._service, request, self._principal, plan).events()) as events:
                async for event in events:
                    await self._ws.send_text(msgspec.json.encode(event).decode())
        except PeakgateError as exc:
            self._record(tier, status_for(NATIVE, exc), started)
            await self._send_error(exc)
        except (WebSocketDisconnect, OSError):
            raise  # the socket is gone: nothing to tell the client
        except Exception:
            _log.exception("unhandled error on %s", WS_PATH)
            self._record(tier, 500, started)
            await self._send_error(PeakgateError("internal server error"))
        else:
            self._record(tier, 200, started)

    def _record(self, tier: str, status: int, started: float) -> None:
        # Each message counts as one request, with the status /v1/translate/stream would have answered.
        metrics = self._service.metrics
        metrics.requests.labels(endpoint=WS_PATH, tier=tier, status=str(status)).inc()
        metrics.request_latency.labels(endpoint=WS_PATH, tier=tier).observe(time.perf_counter() - started)

    def _parse(self, text: str | bytes) -> TranslateRequest:
        if len(text) > self._max_bytes:
            raise InputTooLarge(f"message of {len(text)} bytes is over the {self._max_bytes}-byte limit")
        return _to_domain(decode_json(self._decoder, text, "message"))

    async def _send_error(self, exc: PeakgateError) -> None:
        await self._ws.send_text(msgspec.json.encode(StreamError(exc.message, exc.code)).decode())


def websocket_routes(service: TranslationService) -> list[BaseRoute]:
    """The WebSocket twin of the SSE operation (which `stream_operations` lists with the other operations)."""

    async def websocket(ws: WebSocket) -> None:
        await ws.accept()  # accept first: only an accepted socket can carry the 4401 close code
        try:
            principal = service.authenticate(ws_key(ws))
        except Unauthorized as exc:
            await ws.close(code=WS_POLICY_CLOSE, reason=exc.message)
            return
        await Session(service, ws, principal).serve()

    return [WebSocketRoute(WS_PATH, websocket)]
