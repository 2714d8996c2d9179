"""The served OpenAPI document against the served process: schemathesis checks every answer (no 5xx; status,
content type, headers and body as documented; 405 with `Allow` listing every documented method).

`peakgate serve` runs as a subprocess on echo engines (no engine time) with one API key, which schemathesis
sends through each operation's documented security scheme. Generated requests are bounded and seeded, so
the run is short and reproducible; random input rarely names a language pair the server has, so the success
paths (201/202/204, the event stream, TSV and document downloads) are driven with valid requests as well.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from schemathesis import Case

from bench._http import Server, serve

KEY = "conformance-key"
PAIRS = (("en", "es"), ("es", "en"))
MODELS = [{"name": f"echo-{s}-{t}", "engine": "echo", "source": s, "target": t} for s, t in PAIRS]
FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"
RUN_CONFIG = f"""
seed = 20240601
suppress-health-check = ["all"]
[auth.openapi]
bearer = {{ bearer = "{KEY}" }}
apiKeyHeader = {{ api_key = "{KEY}" }}
deeplAuthKey = {{ api_key = "DeepL-Auth-Key {KEY}" }}
libreApiKey = {{ api_key = "{KEY}" }}
[generation]
max-examples = 25
deterministic = true
database = "none"
[phases.stateful]
enabled = false
[checks]
enabled = false
not_a_server_error.enabled = true
status_code_conformance.enabled = true
content_type_conformance.enabled = true
response_headers_conformance.enabled = true
response_schema_conformance.enabled = true
unsupported_method.enabled = true
allow_header_conformance.enabled = true
[[operations]]
include-path = "/v2/document/{{document_id}}/result"
# 503 + Retry-After is the documented "not translated yet" (the DeepL SDKs poll on it), not a server fault.
checks.not_a_server_error.expected-statuses = ["2xx", "3xx", "4xx", 503]
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    data_dir: Path = tmp_path_factory.mktemp("conformance-data")
    names = [str(model["name"]) for model in MODELS]
    config: dict[str, object] = {
        "data_dir": str(data_dir), "models": MODELS, "tiers": {"tiny": names, "medium": names},
        "keys": [{"key": KEY, "tenant": "conformance", "priority_class": "interactive"}],
    }
    with serve(config) as running:
        yield running


@pytest.fixture(scope="module")
def served_document(server: Server) -> schemathesis.BaseSchema:
    return schemathesis.openapi.from_url(f"{server.url}/openapi.json", config=schemathesis.Config.from_str(RUN_CONFIG))


schema = schemathesis.pytest.from_fixture("served_document")


@schema.parametrize()
def test_generated_requests_conform(case: Case) -> None:
    case.call_and_validate()


def call(document: schemathesis.BaseSchema, method: str, path: str, **case: Any) -> schemathesis.Response:
    """A valid request, checked as the generated ones are (explicit cases get no configured auth: every
    dialect also reads `X-API-Key`); returns the response."""
    return document[path][method].Case(**case).call_and_validate(headers={"X-API-Key": KEY})


@pytest.mark.parametrize(("method", "path", "case"), [
    ("POST", "/v1/translate", {"body": {"segments": ["Save the file"], "source": "en", "target": "es"}}),
    ("POST", "/v1/translate/stream", {"body": {"segments": ["Save the file"], "source": "en", "target": "es"}}),
    ("POST", "/v1/memory", {"body": {"source_lang": "en", "target_lang": "es", "source": "file", "target": "x"}}),
    ("POST", "/v2/translate", {"body": {"text": "Save the file", "target_lang": "ES"}, "media_type": FORM}),
    ("POST", "/translate", {"body": {"q": "Save the file", "source": "auto", "target": "es"},
                            "media_type": "application/json"}),
    ("GET", "/metrics", {}),
])
def test_valid_requests_conform(served_document: schemathesis.BaseSchema, method: str, path: str,
                                case: dict[str, Any]) -> None:
    assert call(served_document, method, path, **case).status_code < 300


def test_glossary_lifecycle_conforms(served_document: schemathesis.BaseSchema) -> None:
    body = {"name": "ops", "source_lang": "en", "target_lang": "es", "entries": "file\tfichero"}
    created = call(served_document, "POST", "/v2/glossaries", body=body, media_type=FORM)
    assert created.status_code == 201
    one = {"path_parameters": {"glossary_id": created.json()["glossary_id"]}}
    assert call(served_document, "GET", "/v2/glossaries/{glossary_id}", **one).status_code == 200
    assert call(served_document, "GET", "/v2/glossaries/{glossary_id}/entries", **one).text == "file\tfichero"
    assert call(served_document, "DELETE", "/v2/glossaries/{glossary_id}", **one).status_code == 204


def test_document_and_batch_jobs_conform(served_document: schemathesis.BaseSchema) -> None:
    upload = {"file": b"Save the file\n", "filename": "notes.txt", "target_lang": "ES"}
    handle = call(served_document, "POST", "/v2/document", body=upload, media_type=MULTIPART).json()
    keyed = {"path_parameters": {"document_id": handle["document_id"]},
             "body": {"document_key": handle["document_key"]}, "media_type": FORM}
    # The download answers 503 + Retry-After until the job is done: both answers are checked.
    download = call(served_document, "POST", "/v2/document/{document_id}/result", **keyed)
    deadline = time.monotonic() + 20
    while download.status_code == 503 and time.monotonic() < deadline:
        assert call(served_document, "POST", "/v2/document/{document_id}", **keyed).status_code == 200
        time.sleep(0.1)
        download = call(served_document, "POST", "/v2/document/{document_id}/result", **keyed)
    assert download.status_code == 200
    job = call(served_document, "POST", "/v1/jobs", body={"segments": ["Save the file"], "target": "es"})
    assert job.status_code == 202
    status = call(served_document, "GET", "/v1/jobs/{job_id}", path_parameters={"job_id": job.json()["job_id"]})
    assert status.status_code == 200
