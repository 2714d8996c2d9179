"""DeepL's v3 multilingual glossaries (/v3/glossaries*), as the official SDKs' `*_multilingual_glossary*` calls
use them, over the same store as /v2/glossaries (`api.glossaries`): a v2 glossary is a v3 glossary with one
dictionary, and a v3 glossary's id works as `glossary_id` on /v2/translate and /v2/document.

- POST /v3/glossaries `{name, dictionaries: [{source_lang, target_lang, entries, entries_format}]}` → 201;
- GET /v3/glossaries, GET/PATCH/DELETE /v3/glossaries/{id}: PATCH renames and merges one dictionary's entries
  (new source terms added, known ones take the new target), DELETE answers 204;
- PUT /v3/glossaries/{id}/dictionaries replaces (or adds) one dictionary and answers its info;
  DELETE …/dictionaries?source_lang=&target_lang= drops one (204);
- GET …/entries?source_lang=&target_lang= answers `{dictionaries: [{…, entries, entries_format: "tsv"}]}`.

Entries come as TSV or CSV (`glossary.entries`); languages as base codes in any case, answered lower-case.
A pair the glossary lacks is 404, as is another tenant's glossary. Store calls run in the thread pool.
"""

from __future__ import annotations

from functools import partial

import msgspec
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.auth import header_key
from peakgate.api.bodies import BodyParser, json_response
from peakgate.api.deepl import Keyed, base_code
from peakgate.api.endpoint import Operation
from peakgate.api.errors import DEEPL
from peakgate.api.glossaries import MAX_GLOSSARY_BODY_BYTES, GlossaryService, parse_dictionary
from peakgate.errors import BadRequest
from peakgate.glossary.entries import to_tsv
from peakgate.glossary.store import Dictionary, DictionaryEntries, Glossary


# Keyed so that PUT's body, one dictionary, may carry the legacy key field too; inside a create or patch
# body the field is unused, like any unknown field.
class DictionaryIn(Keyed, kw_only=True):
    source_lang: str
    target_lang: str
    entries: str
    entries_format: str = "tsv"


class CreateBody(Keyed, kw_only=True):
    name: str
    dictionaries: list[DictionaryIn]


class PatchBody(Keyed, kw_only=True):
    name: str | None = None
    dictionaries: list[DictionaryIn] = msgspec.field(default_factory=list)


class PairQuery(Keyed, kw_only=True):
    source_lang: str
    target_lang: str


class DictionaryOut(msgspec.Struct):
    source_lang: str
    target_lang: str
    entry_count: int


class GlossaryOut(msgspec.Struct):
    glossary_id: str
    name: str
    dictionaries: list[DictionaryOut]
    creation_time: str


class GlossaryList(msgspec.Struct):
    glossaries: list[GlossaryOut]


class DictionaryEntriesOut(msgspec.Struct):
    source_lang: str
    target_lang: str
    entries: str
    entries_format: str = "tsv"


class EntriesOut(msgspec.Struct):
    dictionaries: list[DictionaryEntriesOut]


def _dictionary_out(d: Dictionary) -> DictionaryOut:
    return DictionaryOut(d.source_lang, d.target_lang, d.entry_count)


def _out(g: Glossary) -> GlossaryOut:
    return GlossaryOut(g.glossary_id, g.name, [_dictionary_out(d) for d in g.dictionaries], g.creation_time)


def _parsed(service: GlossaryService, given: DictionaryIn) -> DictionaryEntries:
    return parse_dictionary(service, given.source_lang, given.target_lang, given.entries, given.entries_format)


def _create(service: GlossaryService, tenant: str, body: CreateBody) -> Glossary:
    return service.glossaries.create(tenant, body.name, [_parsed(service, d) for d in body.dictionaries])


def _patch(service: GlossaryService, tenant: str, glossary_id: str, body: PatchBody) -> Glossary:
    if len(body.dictionaries) > 1:
        raise BadRequest("PATCH takes at most one dictionary; send one request per language pair")
    if body.name is None and not body.dictionaries:
        raise BadRequest("nothing to change: send `name` or `dictionaries`")
    store = service.glossaries
    store.get(tenant, glossary_id)  # a missing glossary is 404 before any entry is parsed
    parsed = [_parsed(service, d) for d in body.dictionaries]
    if body.name is not None:
        store.rename(tenant, glossary_id, body.name)
    for dictionary in parsed:
        store.put_dictionary(tenant, glossary_id, dictionary, merge=True)
    return store.get(tenant, glossary_id)


def _put(service: GlossaryService, tenant: str, glossary_id: str, body: DictionaryIn) -> Dictionary:
    service.glossaries.get(tenant, glossary_id)  # a missing glossary is 404 before any entry is parsed
    return service.glossaries.put_dictionary(tenant, glossary_id, _parsed(service, body))


def _pair(query: PairQuery) -> tuple[str, str]:
    return base_code(query.source_lang), base_code(query.target_lang)


def glossary_v3_operations(service: GlossaryService) -> list[Operation]:
    create_parser = BodyParser(CreateBody, MAX_GLOSSARY_BODY_BYTES)
    patch_parser = BodyParser(PatchBody, MAX_GLOSSARY_BODY_BYTES)
    put_parser = BodyParser(DictionaryIn, MAX_GLOSSARY_BODY_BYTES)
    keyed_parser = BodyParser(Keyed, 64 * 1024)
    pair_parser = BodyParser(PairQuery, 64 * 1024)
    store = service.glossaries

    def tenant_of(request: Request, body: Keyed) -> str:
        return service.authenticate(header_key(request, "DeepL-Auth-Key") or body.auth_key).tenant

    def glossary_id(request: Request) -> str:
        return str(request.path_params["glossary_id"])

    async def create(request: Request) -> Response:
        body = await create_parser.parse(request)
        created = await run_in_threadpool(_create, service, tenant_of(request, body), body)
        return json_response(_out(created), status_code=201)

    async def list_all(request: Request) -> Response:
        found = await run_in_threadpool(store.glossaries, tenant_of(request, await keyed_parser.parse(request)))
        return json_response(GlossaryList([_out(g) for g in found]))

    async def get_one(request: Request) -> Response:
        tenant = tenant_of(request, await keyed_parser.parse(request))
        return json_response(_out(await run_in_threadpool(store.get, tenant, glossary_id(request))))

    async def patch(request: Request) -> Response:
        body = await patch_parser.parse(request)
        patched = await run_in_threadpool(_patch, service, tenant_of(request, body), glossary_id(request), body)
        return json_response(_out(patched))

    async def put_dictionary(request: Request) -> Response:
        body = await put_parser.parse(request)
        put = await run_in_threadpool(_put, service, tenant_of(request, body), glossary_id(request), body)
        return json_response(_dictionary_out(put))

    async def delete(request: Request) -> Response:
        tenant = tenant_of(request, await keyed_parser.parse(request))
        await run_in_threadpool(store.delete, tenant, glossary_id(request))
        return Response(status_code=204)

    async def delete_dictionary(request: Request) -> Response:
        query = await pair_parser.parse(request)
        await run_in_threadpool(store.delete_dictionary, tenant_of(request, query), glossary_id(request),
                                *_pair(query))
        return Response(status_code=204)

    async def entries(request: Request) -> Response:
        query = await pair_parser.parse(request)
        source, target = _pair(query)
        found = await run_in_threadpool(partial(store.entries, tenant_of(request, query), glossary_id(request),
                                                source, target))
        return json_response(EntriesOut([DictionaryEntriesOut(source, target, to_tsv(found))]))

    one = "/v3/glossaries/{glossary_id}"
    return [
        Operation("/v3/glossaries", ("POST",), create, DEEPL, "DeepL v3 multilingual glossary create", CreateBody,
                  GlossaryOut, statuses=(201,), auth=True),
        Operation("/v3/glossaries", ("GET",), list_all, DEEPL, "DeepL v3 glossary list", Keyed, GlossaryList,
                  auth=True),
        Operation(one, ("GET",), get_one, DEEPL, "DeepL v3 glossary info", Keyed, GlossaryOut, auth=True),
        Operation(one, ("PATCH",), patch, DEEPL, "DeepL v3 glossary rename / merge one dictionary's entries",
                  PatchBody, GlossaryOut, auth=True),
        Operation(one, ("DELETE",), delete, DEEPL, "DeepL v3 glossary delete", Keyed, produces=(), statuses=(204,),
                  auth=True),
        Operation(f"{one}/dictionaries", ("PUT",), put_dictionary, DEEPL, "DeepL v3 replace (or add) a dictionary",
                  DictionaryIn, DictionaryOut, auth=True),
        Operation(f"{one}/dictionaries", ("DELETE",), delete_dictionary, DEEPL, "DeepL v3 delete a dictionary",
                  PairQuery, produces=(), statuses=(204,), auth=True),
        Operation(f"{one}/entries", ("GET",), entries, DEEPL, "DeepL v3 dictionary entries (TSV in JSON)",
                  PairQuery, EntriesOut, auth=True),
    ]
