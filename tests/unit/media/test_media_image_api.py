"""POST /v1/image's own answers, on the fake service: field checks, the sync cap, a missing engine, the ladder."""

from __future__ import annotations

import io
from pathlib import Path

import httpx
import pytest
from PIL import Image
from tests.unit.api.api_fakes import GOOD_KEY, FakeService, client

from peakgate.config import Settings
from peakgate.errors import Unavailable
from peakgate.jobs.config import JobsConfig
from peakgate.jobs.model import NewJob
from peakgate.media.ocr import find_ocr
from peakgate.media.settings import MediaConfig

AUTH = {"Authorization": f"Bearer {GOOD_KEY}"}


def _png(size: tuple[int, int] = (64, 32)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, "white").save(out, "PNG")
    return out.getvalue()


def _post(service: FakeService, data: bytes, **fields: str) -> httpx.Response:
    with client(service) as c:
        return c.post("/v1/image", headers=AUTH, files={"file": ("a.png", data, "image/png")},
                      data={"target": "es", **fields})


def _service(**media: object) -> FakeService:
    return FakeService(settings=Settings(media=MediaConfig.model_validate(media)))


@pytest.mark.parametrize(("fields", "words"), [
    ({"target": ""}, "missing `target`"),
    ({"target": "de"}, "nothing translates into 'de'"),
    ({"format": "gif"}, "`format` must be json or png"),
    ({"overlay": "maybe"}, "`overlay` must be true or false"),
    ({"async": "later"}, "`async` must be true or false"),
])
def test_bad_fields_are_a_400_before_any_ocr(fields: dict[str, str], words: str) -> None:
    reply = _post(_service(), _png(), **fields)
    assert reply.status_code == 400, reply.text
    assert words in reply.json()["error"]["message"]


def test_an_image_over_the_sync_cap_is_a_413_saying_so_when_jobs_are_off() -> None:
    service = FakeService(settings=Settings(media=MediaConfig(image_sync_max_megapixels=0.001),
                                            jobs=JobsConfig(enabled=False)))
    reply = _post(service, _png((100, 100)))
    assert reply.status_code == 413, reply.text
    assert "async jobs are off" in reply.json()["error"]["message"]


def test_a_job_is_only_shown_to_its_tenant_and_as_its_kind() -> None:
    service = _service()
    job = service.jobs.create(NewJob(tenant="test", kind="image", source="en", target="es", segments=()))
    other = service.jobs.create(NewJob(tenant="rival", kind="image", source="en", target="es", segments=()))
    batch = service.jobs.create(NewJob(tenant="test", kind="batch", source="en", target="es", segments=("a",)))
    with client(service) as c:
        mine = c.get(f"/v1/image/jobs/{job.id}", headers=AUTH)
        assert mine.status_code == 200 and mine.json() == {"job_id": job.id, "status": "recognising"}
        for hidden in (other.id, batch.id, "nope"):
            assert c.get(f"/v1/image/jobs/{hidden}", headers=AUTH).status_code == 404
        assert c.get(f"/v1/image/jobs/{job.id}/overlay", headers=AUTH).status_code == 503  # not done yet


def test_without_ocr_data_images_answer_503_and_readiness_is_untouched(tmp_path: Path) -> None:
    service = _service(tessdata_dir=str(tmp_path))
    reply = _post(service, _png())
    assert reply.status_code == 503, reply.text
    assert "tesseract" in reply.json()["error"]["message"]
    with client(service) as c:
        assert c.get("/readyz").status_code == 200


def test_the_degraded_ladder_drops_the_overlay_first() -> None:
    try:
        find_ocr(MediaConfig())
    except Unavailable as exc:
        pytest.skip(exc.message)
    service = _service()
    service.metrics.degradation_level.set(1)  # L1: the overlay's level
    refused = _post(service, _png(), format="png")
    assert refused.status_code == 503 and "Retry-After" in refused.headers
    answered = _post(service, _png(), overlay="true")  # blank: OCR runs, finds no text, nothing is translated
    assert answered.status_code == 200, answered.text
    assert answered.json()["overlay_dropped"] is True and "overlay_png" not in answered.json()
    assert answered.json()["blocks"] == [] and service.requests == []


@pytest.mark.parametrize("path", ["/v1/image", "/v1/speech"])
def test_the_openapi_document_gives_the_202_job_answer_and_the_status_routes(path: str) -> None:
    with client(_service()) as c:
        document = c.get("/openapi.json").json()
    answers = document["paths"][path]["post"]["responses"]
    assert {code for code in answers if code < "400"} == {"200", "202"}
    accepted = answers["202"]["content"]["application/json"]["schema"]["$ref"].rpartition("/")[2]
    assert document["components"]["schemas"][accepted]["required"] == ["job_id", "status", "status_url"]
    assert answers["202"]["headers"]["Location"]["required"] is True
    status = document["paths"][f"{path}/jobs/{{job_id}}"]["get"]
    assert [p["name"] for p in status["parameters"]] == ["job_id"] and "200" in status["responses"]
    if path == "/v1/image":
        overlay = document["paths"]["/v1/image/jobs/{job_id}/overlay"]["get"]["responses"]["200"]
        assert set(overlay["content"]) == {"image/png"}
