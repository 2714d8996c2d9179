"""Routing of the operation table: one route per path, so a wrong method's 405 lists every method served."""

from __future__ import annotations

import pytest
from api_fakes import GOOD_KEY, FakeService, client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.testclient import TestClient

from peakgate.api.endpoint import Operation, to_routes
from peakgate.api.errors import NATIVE
from peakgate.observe.metrics import NO_TENANT, SERVING_TENANT, Metrics

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


def test_requests_are_counted_per_tenant_the_handler_authenticated_as() -> None:
    metrics = Metrics()

    async def handler(request: Request) -> Response:
        if request.headers.get("key") == "acme-key":
            SERVING_TENANT.set("acme")  # what admission does once it knows the key
        return Response(status_code=200 if "key" in request.headers else 401)

    app = Starlette(routes=to_routes([Operation("/x", ("GET",), handler, NATIVE, "x")], metrics))
    http = TestClient(app)
    for headers in ({"key": "acme-key"}, {"key": "acme-key"}, {}):
        http.get("/x", headers=headers)

    def count(tenant: str, status: str) -> float | None:
        return metrics.registry.get_sample_value(
            "peakgate_tenant_requests_total", {"tenant": tenant, "endpoint": "/x", "status": status})

    assert count("acme", "200") == 2.0
    assert count(NO_TENANT, "401") == 1.0  # never authenticated; the tenant does not leak across requests
