"""Routing of the operation table: one route per path, so a wrong method's 405 lists every method served."""

from __future__ import annotations

import pytest
from api_fakes import GOOD_KEY, FakeService, client
from starlette.requests import Request
from starlette.responses import Response

from peakgate.api.endpoint import Operation, to_routes
from peakgate.api.errors import NATIVE
from peakgate.observe.metrics import Metrics

DEEPL_AUTH = {"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"}


def allowed(header: str) -> set[str]:
    return {method.strip() for method in header.split(",")}


@pytest.mark.parametrize(("path", "methods"), [
    ("/v2/glossaries/some-id", {"GET", "HEAD", "DELETE"}),
    ("/v2/glossaries", {"GET", "HEAD", "POST"}),
    ("/v2/usage", {"GET", "HEAD", "POST"}),
])
def test_wrong_method_lists_every_method_of_the_path(path: str, methods: set[str]) -> None:
    reply = client(FakeService()).put(path, headers=DEEPL_AUTH)
    assert reply.status_code == 405
    assert allowed(reply.headers["Allow"]) == methods
    assert reply.json() == {"message": "Method Not Allowed"}


def test_each_method_of_a_shared_path_reaches_its_own_handler() -> None:
    http = client(FakeService())
    created = http.post("/v2/glossaries", headers=DEEPL_AUTH, data={
        "name": "ops", "source_lang": "en", "target_lang": "es", "entries": "file\tfichero"})
    assert created.status_code == 201
    one = f"/v2/glossaries/{created.json()['glossary_id']}"
    assert http.get(one, headers=DEEPL_AUTH).json()["name"] == "ops"
    assert http.head(one, headers=DEEPL_AUTH).status_code == 200  # HEAD is served by GET
    assert http.delete(one, headers=DEEPL_AUTH).status_code == 204
    assert http.get(one, headers=DEEPL_AUTH).status_code == 404


async def _ok(_request: Request) -> Response:
    return Response()


def test_a_method_declared_twice_on_one_path_is_refused() -> None:
    twice = [Operation("/x", ("GET",), _ok, NATIVE, "one"), Operation("/x", ("GET", "POST"), _ok, NATIVE, "two")]
    with pytest.raises(ValueError, match="GET /x is declared twice"):
        to_routes(twice, Metrics())
