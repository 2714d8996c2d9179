"""Document and batch job routes on a real SQLite store, with the runner driven by hand (no real sleeps)."""

from __future__ import annotations

import asyncio
import io
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from docx import Document
from starlette.applications import Starlette
from starlette.testclient import TestClient

from peakgate.api.contract import Language
from peakgate.api.documents import document_operations
from peakgate.api.endpoint import to_route
from peakgate.clock import FakeClock
from peakgate.domain import Principal
from peakgate.errors import InputTooLarge, PeakgateError, QuotaExceeded, Unauthorized, UnsupportedPair
from peakgate.glossary import DictionaryEntries, Entry, GlossaryStore, build_glossary_store
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import Job, JobKind, NewJob
from peakgate.jobs.runner import JobRunner
from peakgate.jobs.store import SqliteJobStore
from peakgate.observe.metrics import Metrics

GOOD_KEY, OTHER_KEY = "good-key", "other-key"
AUTH = {"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"}
OTHER = {"Authorization": f"DeepL-Auth-Key {OTHER_KEY}"}
BEARER = {"Authorization": f"Bearer {GOOD_KEY}"}
DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"


async def upper(segments: Sequence[str], job: Job) -> list[str]:
    if job.target == "xx":
        raise UnsupportedPair(f"no model translates {job.source} → {job.target}")
    return [s.upper() for s in segments]


@dataclass
class FakeDocService:
    jobs: SqliteJobStore
    jobs_config: JobsConfig = field(default_factory=lambda: JobsConfig(
        max_document_bytes=65_536, max_batch_segments=3, max_document_segments=5))
    metrics: Metrics = field(default_factory=Metrics)
    job_runner: JobRunner = field(init=False)
    refuse: PeakgateError | None = None  # what check_job raises
    checked: list[tuple[tuple[str, ...], str | None, str, str]] = field(default_factory=list)
    billed: int = 0
    glossaries: GlossaryStore = field(default_factory=lambda: build_glossary_store("memory"))

    def __post_init__(self) -> None:
        self.job_runner = JobRunner(self.jobs, upper, FakeClock(), config=self.jobs_config)

    async def check_job(self, segments: Sequence[str], source: str | None, target: str, principal: Principal
                        ) -> int:
        self.checked.append((tuple(segments), source, target, principal.tenant))
        if self.refuse is not None:
            raise self.refuse
        return sum(len(s) for s in segments)

    async def bill_job(self, principal: Principal, characters: int) -> None:
        self.billed += characters

    def authenticate(self, key: str | None) -> Principal:
        tenants = {GOOD_KEY: "test", OTHER_KEY: "other"}
        if key not in tenants:
            raise Unauthorized("invalid API key")
        return Principal(key=key, tenant=tenants[key], priority="interactive")

    def languages(self) -> list[Language]:
        return [Language("en", "English", ("es", "xx")), Language("es", "Spanish", ("en",))]

    def run_jobs(self) -> None:
        async def drain() -> None:
            while await self.job_runner.run_next() is not None:
                pass

        asyncio.run(drain())


@pytest.fixture
def service(tmp_path: Path) -> Iterator[FakeDocService]:
    store = SqliteJobStore(tmp_path / "jobs.db")
    yield FakeDocService(store)
    store.close()


@pytest.fixture
def http(service: FakeDocService) -> TestClient:
    app = Starlette(routes=[to_route(op, service.metrics) for op in document_operations(service)])
    return TestClient(app, raise_server_exceptions=False)


def _upload(http: TestClient, name: str, data: bytes, headers: dict[str, str] | None = None,
            **fields: str) -> dict[str, str]:
    reply = http.post("/v2/document", files={"file": (name, data)}, data={"target_lang": "ES", **fields},
                      headers=AUTH if headers is None else headers)
    assert reply.status_code == 200, reply.text
    body: dict[str, str] = reply.json()
    assert set(body) == {"document_id", "document_key"}
    return body


def test_txt_document_upload_status_download(http: TestClient, service: FakeDocService) -> None:
    handle = _upload(http, "notes.txt", b"hello\n\nworld\n", source_lang="EN")
    url = f"/v2/document/{handle['document_id']}"
    key = {"document_key": handle["document_key"]}
    assert http.post(url, json=key, headers=AUTH).json() == {"document_id": handle["document_id"],
                                                            "status": "queued"}
    not_ready = http.post(f"{url}/result", json=key, headers=AUTH)
    assert not_ready.status_code == 503 and not_ready.headers["retry-after"] == "5"
    service.run_jobs()
    status = http.post(url, data=key, headers=AUTH)  # the key as a form field works too
    assert status.json() == {"document_id": handle["document_id"], "status": "done", "billed_characters": 10}
    result = http.post(f"{url}/result", json=key, headers=AUTH)
    assert result.status_code == 200
    assert result.content == b"HELLO\n\nWORLD\n"
    assert result.headers["content-type"].startswith("text/plain")
    assert 'filename="notes.txt"' in result.headers["content-disposition"]
    job = service.jobs.get(handle["document_id"])
    assert job is not None and (job.source, job.target, job.tenant) == ("en", "es", "test")


def test_html_and_docx_documents(http: TestClient, service: FakeDocService) -> None:
    document = Document()
    document.add_paragraph("a paragraph")
    buffer = io.BytesIO()
    document.save(buffer)
    html = _upload(http, "page.htm", b"<p class='c'>hi <i>there</i></p>")
    docx = _upload(http, "blob", buffer.getvalue(), filename="report.docx", output_format="DOCX")
    service.run_jobs()
    page = http.post(f"/v2/document/{html['document_id']}/result", json={"document_key": html["document_key"]},
                     headers=AUTH)
    assert page.content == b"<p class='c'>HI <i>THERE</i></p>"
    assert page.headers["content-type"].startswith("text/html")
    word = http.post(f"/v2/document/{docx['document_id']}/result", json={"document_key": docx["document_key"]},
                     headers=AUTH)
    assert word.headers["content-type"] == DOCX
    assert Document(io.BytesIO(word.content)).paragraphs[0].text == "A PARAGRAPH"


def test_keys_ids_and_tenants(http: TestClient) -> None:
    handle = _upload(http, "a.txt", b"x")
    url = f"/v2/document/{handle['document_id']}"
    wrong = http.post(url, json={"document_key": "nope"}, headers=AUTH)
    assert wrong.status_code == 403 and "document_key" in wrong.json()["message"]
    assert http.post(url, json={}, headers=AUTH).status_code == 400
    assert http.post("/v2/document/missing", json={"document_key": "k"}, headers=AUTH).status_code == 404
    other = http.post(url, json={"document_key": handle["document_key"]}, headers=OTHER)
    assert other.status_code == 404  # another tenant cannot even learn the id exists
    assert http.post(url, json={"document_key": handle["document_key"]}).status_code == 403
    legacy = http.post(url, data={"document_key": handle["document_key"], "auth_key": GOOD_KEY})
    assert legacy.json()["status"] == "queued"


@pytest.mark.parametrize(("upload", "fields", "status", "fragment"), [
    (("scan.pdf", b"%PDF"), {}, 400, "Invalid file data."),  # DeepL's words for a format it cannot tell
    (("a.txt", b"x"), {"source_lang": "ES", "target_lang": "ES"}, 400, "Source and target language are equal."),
    (("a.txt", b"x"), {"source_lang": "EN", "target_lang": "EN-US"}, 400, "Source and target language are equal."),
    (("a.txt", b"x"), {"target_lang": "DE"}, 400, "Value for 'target_lang' not supported."),
    (("a.txt", b"x"), {"source_lang": "JA"}, 400, "Value for 'source_lang' not supported."),
    (("a.txt", b"x"), {"formality": "more"}, 400, "'formality' is not supported for given 'target_lang'."),
    (("a.txt", b"x"), {"formality": "very"}, 400, "Value for 'formality' not supported."),
    (("a.txt", b"x"), {"glossary_id": "g"}, 400, "requires the source_lang"),
    (("a.txt", b"x"), {"glossary_id": "g", "source_lang": "EN"}, 404, "not found"),
    (("a.txt", b"x"), {"glossary_ids": "g,h", "source_lang": "EN"}, 400, "one glossary"),
    (("bad.docx", b"not a zip"), {}, 400, "not a readable .docx"),
    (("latin.txt", b"caf\xe9"), {}, 400, "not valid UTF-8"),
    (("a.txt", b"x"), {"output_format": "docx"}, 400, "cannot convert txt to docx"),
    (("a.txt", b"x"), {"target_lang": ""}, 400, "target_lang"),
    (("big.txt", b"x" * 80_000), {}, 413, "limit"),
])
def test_bad_uploads(http: TestClient, upload: tuple[str, bytes], fields: dict[str, str], status: int,
                     fragment: str) -> None:
    reply = http.post("/v2/document", files={"file": upload}, data={"target_lang": "ES", **fields}, headers=AUTH)
    assert reply.status_code == status
    assert fragment in reply.json()["message"]


def test_upload_needs_a_multipart_file_and_a_key(http: TestClient) -> None:
    assert "multipart" in http.post("/v2/document", data={"target_lang": "ES"}, headers=AUTH).json()["message"]
    no_file = http.post("/v2/document", files={"other": ("a.txt", b"x")}, data={"target_lang": "ES"}, headers=AUTH)
    assert no_file.status_code == 400 and "`file`" in no_file.json()["message"]
    unauth = http.post("/v2/document", files={"file": ("a.txt", b"x")}, data={"target_lang": "ES"})
    assert unauth.status_code == 403


def test_failed_document_reports_its_error(http: TestClient, service: FakeDocService) -> None:
    handle = _upload(http, "a.txt", b"x", target_lang="XX")
    service.run_jobs()
    key = {"document_key": handle["document_key"]}
    status = http.post(f"/v2/document/{handle['document_id']}", json=key, headers=AUTH).json()
    assert status["status"] == "error" and "no model translates" in status["error_message"]
    assert http.post(f"/v2/document/{handle['document_id']}/result", json=key, headers=AUTH).status_code == 400


@pytest.mark.parametrize("kind", ["image", "speech"])
def test_a_media_job_is_not_answered_as_a_document_or_a_batch(http: TestClient, service: FakeDocService,
                                                              kind: JobKind) -> None:
    job = service.jobs.create(NewJob(tenant="test", kind=kind, source="en", target="es", segments=()))
    assert http.get(f"/v1/jobs/{job.id}", headers=BEARER).status_code == 404
    reply = http.post(f"/v2/document/{job.id}", json={"document_key": job.key}, headers=AUTH)
    assert reply.status_code == 404, reply.text


def test_batch_job_lifecycle(http: TestClient, service: FakeDocService) -> None:
    created = http.post("/v1/jobs", json={"segments": ["one", "two"], "source": "auto", "target": "ES"},
                        headers=BEARER)
    assert created.status_code == 202
    job_id = created.json()["job_id"]
    assert created.json()["status"] == "queued"
    queued = http.get(f"/v1/jobs/{job_id}", headers=BEARER).json()
    assert queued == {"job_id": job_id, "status": "queued", "segments_total": 2, "segments_done": 0,
                      "billed_characters": 0}
    service.run_jobs()
    done = http.get(f"/v1/jobs/{job_id}", headers=BEARER).json()
    assert done["status"] == "done" and done["translations"] == ["ONE", "TWO"] and done["billed_characters"] == 6
    assert http.get(f"/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {OTHER_KEY}"}).status_code == 404
    assert http.get(f"/v1/jobs/{job_id}").status_code == 401
    job = service.jobs.get(job_id)
    assert job is not None and (job.source, job.target) == (None, "es")


@pytest.mark.parametrize(("body", "fragment"), [
    ({"segments": [], "target": "es"}, "no segments"),
    ({"segments": ["a"] * 4, "target": "es"}, "too many segments"),
    ({"target": "es"}, "segments"),
])
def test_bad_batch_jobs(http: TestClient, body: dict[str, object], fragment: str) -> None:
    reply = http.post("/v1/jobs", json=body, headers=BEARER)
    assert reply.status_code == 400
    assert fragment in reply.json()["error"]["message"]


def test_operations_describe_themselves_in_openapi(service: FakeDocService) -> None:
    from peakgate.api.openapi import openapi_document

    paths = openapi_document(document_operations(service))["paths"]
    assert set(paths) == {"/v2/document", "/v2/document/{document_id}", "/v2/document/{document_id}/result",
                          "/v1/jobs", "/v1/jobs/{job_id}"}
    assert "multipart/form-data" in paths["/v2/document"]["post"]["requestBody"]["content"]


def test_a_bad_header_key_is_refused_before_the_body_is_read(http: TestClient) -> None:
    reply = http.post("/v2/document", files={"file": ("big.txt", b"x" * 80_000)}, data={"target_lang": "ES"},
                      headers={"Authorization": "DeepL-Auth-Key wrong"})
    assert reply.status_code == 403  # not 413: the key is checked first


def test_status_estimates_seconds_remaining_once_throughput_is_measured(http: TestClient,
                                                                        service: FakeDocService) -> None:
    service.job_runner.throughput.observe(segments=2, seconds=1.0)
    handle = _upload(http, "a.txt", b"one\ntwo\nthree\nfour")
    status = http.post(f"/v2/document/{handle['document_id']}", json={"document_key": handle["document_key"]},
                       headers=AUTH).json()
    assert status == {"document_id": handle["document_id"], "status": "queued", "seconds_remaining": 2}


def test_uploads_and_batch_jobs_are_checked_and_billed_at_submission(http: TestClient,
                                                                     service: FakeDocService) -> None:
    _upload(http, "a.txt", b"one\n\ntwo\n", source_lang="EN-GB")
    created = http.post("/v1/jobs", json={"segments": ["x", "yz"], "target": "ES"}, headers=BEARER)
    assert created.status_code == 202
    assert service.checked == [(("one", "two"), "en", "es", "test"), (("x", "yz"), None, "es", "test")]
    assert service.billed == 6 + 3


@pytest.mark.parametrize(("refusal", "document_status", "batch_status"), [
    (QuotaExceeded("character quota for this billing period exhausted"), 456, 402),
    (InputTooLarge("segment 0 has 100000 characters; the limit is 5000"), 413, 413),
    (UnsupportedPair("no model serves en->xx"), 400, 400),
])
def test_a_refused_job_is_neither_queued_nor_billed(http: TestClient, service: FakeDocService,
                                                    refusal: PeakgateError, document_status: int,
                                                    batch_status: int) -> None:
    service.refuse = refusal
    document = http.post("/v2/document", files={"file": ("a.txt", b"hello")}, data={"target_lang": "ES"},
                         headers=AUTH)
    assert document.status_code == document_status and document.json()["message"] == refusal.message
    batch = http.post("/v1/jobs", json={"segments": ["hello"], "target": "es"}, headers=BEARER)
    assert batch.status_code == batch_status and batch.json()["error"]["message"] == refusal.message
    assert service.jobs.claim_next() is None and service.billed == 0


@pytest.mark.parametrize(("data", "fragment"), [
    (b"x" * 65_537, "document of 65537 bytes is over the 65536-byte limit"),
    (b"1\n2\n3\n4\n5\n6\n", "document has 6 segments; the limit is 5"),
], ids=["bytes", "segments"])
def test_documents_over_the_caps_are_413_at_submission(http: TestClient, service: FakeDocService, data: bytes,
                                                       fragment: str) -> None:
    reply = http.post("/v2/document", files={"file": ("a.txt", data)}, data={"target_lang": "ES"}, headers=AUTH)
    assert reply.status_code == 413 and reply.json() == {"message": fragment}
    assert service.jobs.claim_next() is None


def test_invalid_utf8_in_an_upload_field_is_a_400(http: TestClient, service: FakeDocService) -> None:
    reply = http.post("/v2/document", files={"file": ("a.txt", b"hello"), "target_lang": (None, b"E\xffS")},
                      headers=AUTH)
    assert reply.status_code == 400
    assert reply.json()["message"].startswith("field `target_lang` is not valid UTF-8")
    assert service.jobs.claim_next() is None


def test_deeply_nested_job_json_is_a_400(http: TestClient) -> None:
    body = b'{"segments": ["a"], "target": "es", "x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}"
    reply = http.post("/v1/jobs", content=body, headers={**BEARER, "Content-Type": "application/json"})
    assert reply.status_code == 400 and reply.json()["error"]["message"] == "request body is nested too deeply"
    status = http.post("/v2/document/any", content=b'{"x": ' + b"[" * 10_000 + b"]" * 10_000 + b"}",
                       headers={**AUTH, "Content-Type": "application/json"})
    assert status.status_code == 400 and status.json()["message"] == "request body is nested too deeply"


def test_ids_and_keys_have_deepls_shape(http: TestClient) -> None:
    handle = _upload(http, "a.txt", b"x")
    assert re.fullmatch(r"[0-9A-F]{32}", handle["document_id"])
    assert re.fullmatch(r"[0-9A-F]{64}", handle["document_key"])
    assert handle["document_id"] != _upload(http, "a.txt", b"x")["document_id"]


def test_a_glossary_travels_with_the_job(http: TestClient, service: FakeDocService) -> None:
    made = service.glossaries.create("test", "G", [DictionaryEntries("en", "es", [Entry("file", "archivo")])])
    reply = http.post("/v2/document", files={"file": ("a.txt", b"the file")}, headers=AUTH,
                      data={"target_lang": "ES", "source_lang": "EN", "glossary_id": made.glossary_id,
                            "formality": "prefer_less"})
    assert reply.status_code == 200, reply.text
    job = service.jobs.get(reply.json()["document_id"])
    assert job is not None and (job.source, job.target, job.glossary_id) == ("en", "es", made.glossary_id)
    wrong_pair = http.post("/v2/document", files={"file": ("a.txt", b"x")}, headers=AUTH,
                           data={"target_lang": "EN-GB", "source_lang": "ES", "glossary_id": made.glossary_id})
    assert (wrong_pair.status_code, wrong_pair.json()["message"]) == (
        400, f"glossary {made.glossary_id!r} has no es→en dictionary")
    theirs = http.post("/v2/document", files={"file": ("a.txt", b"x")}, headers=OTHER,
                       data={"target_lang": "ES", "source_lang": "EN", "glossary_id": made.glossary_id})
    assert theirs.status_code == 404  # another tenant's glossary is as good as absent
