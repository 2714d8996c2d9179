"""DeepL API v2 glossaries (/v2/glossaries*, /v2/glossary-language-pairs), as the official SDKs call them.

Shapes follow DeepL: create answers 201 with the glossary's info, delete 204 with no body, entries come
back as `text/tab-separated-values`; language codes are answered lower-case, taken in any case (the SDKs
send "EN"). A tenant sees only its own glossaries; anyone else's id is a 404 like an unknown one. Store
calls run in the thread pool: SQLite blocks, and a 10 MiB create should not stall other requests.

The store is shared with /v3/glossaries (`api.glossaries_v3`): a v2 glossary is a one-dictionary glossary, and
a v3 glossary with several dictionaries (or none) is not listed here and answers 404 here.
"""

from __future__ import annotations

from typing import Protocol

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import BodyParser, json_response
from peakgate.api.contract import Language
from peakgate.api.deepl import Keyed, base_code
from peakgate.api.endpoint import FORM_BODIES, Operation
from peakgate.api.errors import DEEPL
from peakgate.domain import Principal
from peakgate.errors import UnsupportedPair
from peakgate.glossary.entries import MAX_GLOSSARY_BYTES, parse_entries, to_tsv
from peakgate.glossary.store import Dictionary, DictionaryEntries, Glossary, GlossaryNotFound, GlossaryStore
from peakgate.observe.metrics import Metrics

TSV = "text/tab-separated-values"
# Entries may arrive JSON-escaped (\uXXXX: 6 bytes a character); parse_entries then caps the decoded text.
MAX_GLOSSARY_BODY_BYTES = MAX_GLOSSARY_BYTES * 6 + 64 * 1024


class GlossaryService(Protocol):
    """What these routes need; `peakgate.service.Service` provides it once it holds a glossary store."""

    @property
    def metrics(self) -> Metrics: ...

    @property
    def glossaries(self) -> GlossaryStore: ...

    def authenticate(self, key: str | None) -> Principal: ...

    def languages(self) -> list[Language]: ...


class CreateBody(Keyed, kw_only=True):
    name: str
    source_lang: str
    target_lang: str
    entries: str
    entries_format: str = "tsv"


class GlossaryOut(msgspec.Struct):
    glossary_id: str
    name: str
    ready: bool
    source_lang: str
    target_lang: str
    creation_time: str
    entry_count: int


class GlossaryList(msgspec.Struct):
    glossaries: list[GlossaryOut]


class LanguagePair(msgspec.Struct):
    source_lang: str
    target_lang: str


class LanguagePairs(msgspec.Struct):
    supported_languages: list[LanguagePair]


def _single(g: Glossary) -> Dictionary:
    if g.single is None:
        raise GlossaryNotFound(f"glossary {g.glossary_id!r} has {len(g.dictionaries)} dictionaries: "
                               "read it with /v3/glossaries")
    return g.single


def _out(g: Glossary) -> GlossaryOut:
    d = _single(g)
    return GlossaryOut(g.glossary_id, g.name, g.ready, d.source_lang, d.target_lang, g.creation_time, d.entry_count)


def _pairs(service: GlossaryService) -> list[LanguagePair]:
    return [LanguagePair(lang.code, target) for lang in service.languages() for target in lang.targets]


def parse_dictionary(service: GlossaryService, source_lang: str, target_lang: str, entries: str,
                     entries_format: str) -> DictionaryEntries:
    """One dictionary from a request: a pair this server serves, entries parsed strictly (TSV or CSV)."""
    source, target = base_code(source_lang), base_code(target_lang)
    if LanguagePair(source, target) not in _pairs(service):
        raise UnsupportedPair(f"Unsupported glossary language pair: {source}→{target}")
    return DictionaryEntries(source, target, parse_entries(entries, entries_format.strip().lower(),
                                                           langs=(source, target)))


def _create(service: GlossaryService, tenant: str, body: CreateBody) -> Glossary:
    dictionary = parse_dictionary(service, body.source_lang, body.target_lang, body.entries, body.entries_format)
    return service.glossaries.create(tenant, body.name, [dictionary])


def _entries(store: GlossaryStore, tenant: str, glossary_id: str) -> str:
    d = _single(store.get(tenant, glossary_id))
    return to_tsv(store.entries(tenant, glossary_id, d.source_lang, d.target_lang))


def glossary_operations(service: GlossaryService) -> list[Operation]:
    create_parser = BodyParser(CreateBody, MAX_GLOSSARY_BODY_BYTES)
    keyed_parser = BodyParser(Keyed, 64 * 1024)
    store = service.glossaries

    async def tenant_of(request: Request) -> str:
        body = await keyed_parser.parse(request)
        return service.authenticate(header_key(request, "DeepL-Auth-Key") or body.auth_key).tenant

    def glossary_id(request: Request) -> str:
        return str(request.path_params["glossary_id"])

    async def create(request: Request) -> Response:
        body = await create_parser.parse(request)
        tenant = service.authenticate(header_key(request, "DeepL-Auth-Key") or body.auth_key).tenant
        created = await run_in_threadpool(_create, service, tenant, body)
        return json_response(_out(created), status_code=201)

    async def list_all(request: Request) -> Response:
        found = await run_in_threadpool(store.glossaries, await tenant_of(request))
        return json_response(GlossaryList([_out(g) for g in found if g.single is not None]))

    async def get_one(request: Request) -> Response:
        return json_response(_out(await run_in_threadpool(store.get, await tenant_of(request), glossary_id(request))))

    async def delete(request: Request) -> Response:
        await run_in_threadpool(store.delete, await tenant_of(request), glossary_id(request))
        return Response(status_code=204)

    async def entries(request: Request) -> Response:
        found = await run_in_threadpool(_entries, store, await tenant_of(request), glossary_id(request))
        return Response(found, media_type=TSV)

    async def pairs(request: Request) -> Response:
        await tenant_of(request)
        return json_response(LanguagePairs(_pairs(service)))

    one = "/v2/glossaries/{glossary_id}"
    return [
        Operation("/v2/glossaries", ("POST",), create, DEEPL, "DeepL-compatible glossary create", CreateBody,
                  GlossaryOut, consumes=FORM_BODIES, statuses=(201,), auth=True),
        Operation("/v2/glossaries", ("GET",), list_all, DEEPL, "DeepL-compatible glossary list", Keyed, GlossaryList,
                  auth=True),
        Operation(one, ("GET",), get_one, DEEPL, "DeepL-compatible glossary info", Keyed, GlossaryOut, auth=True),
        Operation(one, ("DELETE",), delete, DEEPL, "DeepL-compatible glossary delete", Keyed, produces=(),
                  statuses=(204,), auth=True),
        Operation(f"{one}/entries", ("GET",), entries, DEEPL, "DeepL-compatible glossary entries", Keyed,
                  produces=(TSV,), auth=True),
        Operation("/v2/glossary-language-pairs", ("GET",), pairs, DEEPL, "DeepL-compatible glossary language pairs",
                  Keyed, LanguagePairs, auth=True),
    ]
