"""The served OpenAPI document says what the routes do: path parameters, success statuses, media types in
and out, and each dialect's error answers (`Retry-After` on 429/503)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from api_fakes import FakeService, client

Json = dict[str, Any]
RETRY_LATER = ("429", "503")


@pytest.fixture(scope="module")
def document() -> Json:
    served: Json = client(FakeService()).get("/openapi.json").json()
    return served


def resolve(document: Json, schema: Json) -> Json:
    name = schema["$ref"].removeprefix("#/components/schemas/")
    resolved: Json = document["components"]["schemas"][name]
    return resolved


def operations(document: Json) -> list[tuple[str, str, Json]]:
    return [(path, method, op) for path, item in document["paths"].items() for method, op in item.items()]


def test_every_path_parameter_is_declared(document: Json) -> None:
    for path, method, op in operations(document):
        declared = {p["name"] for p in op.get("parameters", []) if p["in"] == "path"}
        assert declared == set(re.findall(r"{(\w+)}", path)), f"{method} {path}"
    job = document["paths"]["/v1/jobs/{job_id}"]["get"]["parameters"]
    assert job == [{"name": "job_id", "in": "path", "required": True, "schema": {"type": "string",
                                                                               "pattern": "^[^/]+$"}}]


@pytest.mark.parametrize(("path", "method", "status"), [
    ("/v1/memory", "post", "201"), ("/v2/glossaries", "post", "201"), ("/v1/jobs", "post", "202"),
    ("/v2/glossaries/{glossary_id}", "delete", "204"),
])
def test_success_status_is_the_one_served(document: Json, path: str, method: str, status: str) -> None:
    answers = {code for code in document["paths"][path][method]["responses"] if code < "400"}
    assert answers == {status}


def test_delete_answers_no_body(document: Json) -> None:
    assert "content" not in document["paths"]["/v2/glossaries/{glossary_id}"]["delete"]["responses"]["204"]


@pytest.mark.parametrize(("path", "method", "media_types"), [
    ("/v1/translate/stream", "post", {"text/event-stream"}),
    ("/v2/glossaries/{glossary_id}/entries", "get", {"text/tab-separated-values"}),
    ("/v2/document/{document_id}/result", "post",
     {"text/plain; charset=utf-8", "text/html; charset=utf-8",
      "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}),
])
def test_answer_media_types(document: Json, path: str, method: str, media_types: set[str]) -> None:
    assert set(document["paths"][path][method]["responses"]["200"]["content"]) == media_types


def test_metrics_answer_in_the_prometheus_text_format(document: Json) -> None:
    (media_type,) = document["paths"]["/metrics"]["get"]["responses"]["200"]["content"]
    assert media_type.startswith("text/plain; version=")


def test_event_stream_describes_each_event(document: Json) -> None:
    schema = document["paths"]["/v1/translate/stream"]["post"]["responses"]["200"]["content"]["text/event-stream"]
    data = schema["schema"]["properties"]["data"]
    assert data["contentMediaType"] == "application/json"
    assert resolve(document, data["contentSchema"]["anyOf"][0])["title"] == "StreamEvent"


def test_document_upload_is_multipart_with_a_binary_file(document: Json) -> None:
    body = document["paths"]["/v2/document"]["post"]["requestBody"]
    assert set(body["content"]) == {"multipart/form-data"}
    upload = resolve(document, body["content"]["multipart/form-data"]["schema"])
    assert upload["properties"]["file"] == {"type": "string", "contentMediaType": "application/octet-stream"}
    assert set(upload["required"]) == {"file", "target_lang"}


def test_get_and_delete_read_query_fields_not_a_body(document: Json) -> None:
    for path, method, op in operations(document):
        if method in ("get", "delete"):
            assert "requestBody" not in op, f"{method} {path}"
    delete = document["paths"]["/v2/glossaries/{glossary_id}"]["delete"]
    assert {p["name"]: p["in"] for p in delete["parameters"]} == {"glossary_id": "path", "auth_key": "query"}


@pytest.mark.parametrize(("path", "method", "shape", "statuses"), [
    ("/v1/translate", "post", "NativeError", {"400", "401", "402", "404", "413", "429", "500", "502", "503", "504"}),
    ("/v2/translate", "post", "DeeplError", {"400", "403", "404", "413", "429", "456", "500", "503"}),
    ("/translate", "post", "LibreError", {"400", "403", "404", "429", "500", "503"}),
])
def test_errors_are_the_dialects(document: Json, path: str, method: str, shape: str, statuses: set[str]) -> None:
    responses = document["paths"][path][method]["responses"]
    errors = {code: answer for code, answer in responses.items() if code >= "400"}
    assert set(errors) == statuses
    for code, answer in errors.items():
        assert resolve(document, answer["content"]["application/json"]["schema"])["title"] == shape, code


def test_retry_later_answers_carry_retry_after(document: Json) -> None:
    checked = 0
    for path, method, op in operations(document):
        for code in RETRY_LATER:
            if code in op["responses"]:
                assert op["responses"][code]["headers"]["Retry-After"]["required"], f"{method} {path} {code}"
                checked += 1
    assert checked > len(document["paths"])  # every keyed operation documents both


def test_operations_without_a_key_never_answer_key_errors(document: Json) -> None:
    healthz = document["paths"]["/healthz"]["get"]["responses"]
    assert not {"401", "402", "429"} & set(healthz)
    assert {"500", "503"} <= set(healthz)
    assert "security" not in document["paths"]["/healthz"]["get"]


def test_readiness_503_is_its_own_answer(document: Json) -> None:
    not_ready = document["paths"]["/readyz"]["get"]["responses"]["503"]
    assert resolve(document, not_ready["content"]["application/json"]["schema"])["title"] == "Status"


def test_operation_ids_are_unique_identifiers(document: Json) -> None:
    ids = [op["operationId"] for _path, _method, op in operations(document)]
    assert len(ids) == len(set(ids))
    assert all(re.fullmatch(r"\w+", op_id) for op_id in ids)
