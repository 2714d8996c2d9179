"""`GET /v1/translate`: translations of static strings as cacheable resources, so a CDN or a browser serves
repeats without reaching peakgate (docs/edge-caching.md).

The GET runs the POST's path (auth, admission, cache, TM, PII, glossary) and answers the same JSON, plus
`Cache-Control` from the tenant's policy (`api/edge_settings.py`), a validator (`ETag`) and `Vary`.

The ETag is derived from the translation, not from the request: a request-derived tag (text, target, tier,
glossary and served model versions) would let a 304 skip translating, but everything that can change the
answer would have to be in it (TM corrections, glossary edits, the degradation ladder, detection, the tier
map), and one input forgotten means caches keep a wrong translation as valid. Derived from the result, the
tag changes exactly when the answer does; a revalidation still runs the pipeline, where a repeat is a result
cache hit (no engine time). Caches serve fresh copies without asking at all, so only revalidations pay it.

The tag is weak (`W/"…"`): it covers what was translated (text, languages, model, tier, pivot, billing,
degradation) and leaves out how it was served (`origin`: engine, then cache; `tm_score`), so a repeat served
from the cache revalidates as the same translation although those body fields differ.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Sequence

import msgspec
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import BodyParser, as_segments, source_or_detect
from peakgate.api.contract import TranslationService
from peakgate.api.edge_settings import EdgeCacheConfig
from peakgate.api.endpoint import Operation, set_served
from peakgate.api.errors import NATIVE
from peakgate.domain import TranslateRequest, TranslateResult
from peakgate.errors import BadRequest, InputTooLarge
from peakgate.redaction import RedactionConfig, Redactor

Render = Callable[[TranslateResult], Response]  # the POST's serializer: both methods answer the same body
NO_STORE = "no-store"
# Where the native API reads keys (`auth.header_key`): with keys configured, the key picks the tenant, whose
# TM, glossaries and policy change the answer, so caches keep one variant per key. Nothing else the request
# carries changes it (the body is always JSON: no Accept; languages come from the query: no Accept-Language).
KEY_HEADERS = "Authorization, X-API-Key"
_ENTITY_TAG = re.compile(r'(?:W/)?("[^"]*")')


class EdgeQuery(msgspec.Struct, kw_only=True):
    """The query string of `GET /v1/translate`; repeat `text` for several segments."""

    text: str | list[str]
    target: str
    source: str | None = None  # None or "auto": detect
    tier: str | None = None
    glossary_id: str | None = None


def cache_control(config: EdgeCacheConfig, *, keyed: bool, holds_pii: bool, degraded: bool) -> str:
    """The `Cache-Control` a translation answers with (a pure policy: docs/edge-caching.md has the table)."""
    if not config.enabled or (holds_pii and not config.allow_pii) or (keyed and config.private_keys == "no-store"):
        return NO_STORE
    shared = not keyed or config.private_keys == "shared"
    directives = ["public" if shared else "private"]
    if degraded:
        # A lighter model's answer under load must not outlive the surge: kept, but revalidated on every use.
        return ", ".join([*directives, "no-cache"])
    directives.append(f"max-age={config.max_age_s}")
    if shared and config.shared_max_age_s is not None:
        directives.append(f"s-maxage={config.shared_max_age_s}")
    if config.stale_while_revalidate_s:
        directives.append(f"stale-while-revalidate={config.stale_while_revalidate_s}")
    return ", ".join(directives)


def entity_tag(result: TranslateResult) -> str:
    """A weak validator over what was translated (see the module docstring for what it leaves out)."""
    content = ([(t.text, t.detected_source, t.model, t.tier, t.pivot) for t in result.translations],
               result.billed_characters, result.degraded)
    return f'W/"{hashlib.blake2b(msgspec.json.encode(content), digest_size=16).hexdigest()}"'


def none_match(if_none_match: str, etag: str) -> bool:
    """RFC 9110 §13.1.2: true when `If-None-Match` names `etag` (weak comparison: `W/` ignored) or is `*`."""
    if if_none_match.strip() == "*":
        return True
    opaque = etag.removeprefix("W/")
    return opaque in _ENTITY_TAG.findall(if_none_match)


def _to_domain(query: EdgeQuery) -> TranslateRequest:
    return TranslateRequest(segments=as_segments(query.text), source=source_or_detect(query.source),
                            target=query.target.strip().lower(), tier=query.tier, glossary_id=query.glossary_id)


def _check_url_only(request: Request, max_query_bytes: int) -> None:
    # Caches key a GET by its URL alone: a body would change the answer without changing the key.
    if request.headers.get("content-length", "0") != "0" or "transfer-encoding" in request.headers:
        raise BadRequest("GET /v1/translate takes its fields in the query string only; send a body with POST")
    size = len(request.scope["query_string"])
    if size > max_query_bytes:
        raise InputTooLarge(f"query string of {size} bytes is over the {max_query_bytes}-byte limit for GET; "
                            "send longer texts with POST")


def _holds_pii(detector: Redactor, segments: Sequence[str]) -> bool:
    return any(detector.redact(segment).spans for segment in segments)


def edge_operation(service: TranslationService, render: Render, reply: object) -> Operation:
    """`GET /v1/translate`, answering `reply` (the POST's response type) through `render`."""
    policy = service.settings.edge_cache
    parser = BodyParser(EdgeQuery, 0)  # never reads a body: `_check_url_only` refuses one first
    # Every kind peakgate detects, whatever the tenant's redaction settings: a CDN is outside its control.
    pii = Redactor.from_config(RedactionConfig(enabled=True))

    async def translate(request: Request) -> Response:
        _check_url_only(request, policy.max_query_bytes)
        principal = service.authenticate(header_key(request, "Bearer"))
        domain = _to_domain(await parser.parse(request))
        result = await service.translate(domain, principal)
        set_served(request, result)
        config = policy.config_for(principal.tenant)
        keyed = principal.key is not None  # open dev mode: every caller is the anonymous tenant
        holds_pii = not config.allow_pii and _holds_pii(pii, domain.segments)
        headers = {"Cache-Control": cache_control(config, keyed=keyed, holds_pii=holds_pii,
                                                  degraded=result.degraded is not None)}
        if keyed:
            headers["Vary"] = KEY_HEADERS
        if headers["Cache-Control"] != NO_STORE:  # nothing is stored, so nothing is ever revalidated
            headers["ETag"] = etag = entity_tag(result)
            if none_match(", ".join(request.headers.getlist("if-none-match")), etag):
                return Response(status_code=304, headers=headers)
        response = render(result)
        response.headers.update(headers)
        return response

    return Operation("/v1/translate", ("GET",), translate, NATIVE,
                     "Translate static strings, cacheably (ETag, Cache-Control, 304 on If-None-Match)",
                     EdgeQuery, reply, statuses=(200, 304), auth=True)
