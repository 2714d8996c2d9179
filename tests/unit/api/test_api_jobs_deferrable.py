"""`POST /v1/jobs` with `deferrable` and `latest_finish`: accepted as RFC 3339 or Unix seconds in the future and
stored with the job; every other combination a clear 400."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.testclient import TestClient
from test_api_documents import BEARER, FakeDocService

from peakgate.api.documents import document_operations
from peakgate.api.endpoint import to_route
from peakgate.jobs.store import SqliteJobStore

NOW = 1_800_000_000.0  # 2027-01-15T08:00:00Z


class _Wall:
    def now(self) -> float:
        return NOW


@pytest.fixture
def service(tmp_path: Path) -> Iterator[FakeDocService]:
    store = SqliteJobStore(tmp_path / "jobs.db")
    yield FakeDocService(store)
    store.close()


@pytest.fixture
def http(service: FakeDocService) -> TestClient:
    app = Starlette(routes=[to_route(op, service.metrics) for op in document_operations(service, _Wall())])
    return TestClient(app, raise_server_exceptions=False)


@pytest.mark.parametrize(("latest_finish", "stored"), [
    ("2027-01-16T02:00:00Z", NOW + 18 * 3600),
    ("2027-01-16T10:00:00+08:00", NOW + 18 * 3600),
    (NOW + 600, NOW + 600),
])
def test_a_deferrable_job_is_stored_with_its_latest_finish(http: TestClient, service: FakeDocService,
                                                           latest_finish: str | float, stored: float) -> None:
    created = http.post("/v1/jobs", headers=BEARER, json={
        "segments": ["one"], "target": "es", "deferrable": True, "latest_finish": latest_finish})
    assert created.status_code == 202, created.text
    job = service.jobs.get(created.json()["job_id"])
    assert job is not None and job.deferrable and job.latest_finish == stored
    status = http.get(f"/v1/jobs/{job.id}", headers=BEARER).json()
    assert status["deferrable"] is True and status["status"] == "queued"


@pytest.mark.parametrize(("extra", "says"), [
    ({"deferrable": True}, "a deferrable job needs `latest_finish`"),
    ({"latest_finish": NOW + 600}, "`latest_finish` is for deferrable jobs"),
    ({"deferrable": True, "latest_finish": NOW - 1}, "must be in the future"),
    ({"deferrable": True, "latest_finish": "2027-01-15T07:00:00Z"}, "must be in the future"),
    ({"deferrable": True, "latest_finish": "tomorrow night"}, "neither RFC 3339 nor Unix seconds"),
    ({"deferrable": True, "latest_finish": "2027-01-16T02:00:00"}, "has no UTC offset"),
    ({"deferrable": "yes", "latest_finish": NOW + 600}, "deferrable"),
])
def test_bad_deferral_fields_are_a_clear_400(http: TestClient, extra: dict[str, object], says: str) -> None:
    reply = http.post("/v1/jobs", headers=BEARER, json={"segments": ["one"], "target": "es", **extra})
    assert reply.status_code == 400
    assert says in reply.json()["error"]["message"]
