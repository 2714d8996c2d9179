"""Personal data sent in a batch job, a document and a glossary is sealed on disk (database files and their
WALs, read as raw bytes, while the server runs and after it stopped) and served back in the clear."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from bench._http import serve
from bench.documents import ECHO, KEY_A, Documents, server_config

EMAIL, PHONE = "alice@example.com", "+1 415 555 0100"
SEGMENTS = [f"Write to {EMAIL} today", f"Call {PHONE} after noon"]
DOCUMENT = "\n".join(SEGMENTS).encode() + b"\n"


def _raw_bytes(data_dir: Path) -> bytes:
    """Every file the stores wrote (databases, WALs, journals), as it lies on disk."""
    return b"".join(p.read_bytes() for p in sorted(data_dir.rglob("*")) if p.is_file())


def _batch_translations(http: httpx.Client, job_id: str, timeout_s: float = 30.0) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        body = http.get(f"/v1/jobs/{job_id}", headers={"Authorization": f"Bearer {KEY_A}"}).json()
        if body["status"] == "done":
            return list(body["translations"])
        time.sleep(0.05)
    raise AssertionError(f"batch job {job_id} not done")


def _assert_sealed(data_dir: Path) -> None:
    raw = _raw_bytes(data_dir)
    assert (data_dir / "jobs.sqlite3").is_file() and (data_dir / "glossaries.sqlite3").is_file()
    for secret in (EMAIL, PHONE, "alice"):
        assert secret.encode() not in raw, f"{secret!r} stored in the clear"


def test_personal_data_is_sealed_at_rest_and_served_in_the_clear(tmp_path: Path) -> None:
    auth = {"Authorization": f"DeepL-Auth-Key {KEY_A}"}
    with serve(server_config(ECHO, tmp_path)) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        reply = http.post("/v1/jobs", headers={"Authorization": f"Bearer {KEY_A}"},
                          json={"segments": SEGMENTS, "source": "en", "target": "es"})
        assert reply.status_code == 202, reply.text
        job_id = reply.json()["job_id"]
        docs = Documents(server.url)
        handle = docs.upload(KEY_A, "contacts.txt", DOCUMENT)
        reply = http.post("/v2/glossaries", headers=auth, data={
            "name": f"Contacts of {EMAIL}", "source_lang": "EN", "target_lang": "ES",
            "entries": f"{EMAIL}\t{PHONE}", "entries_format": "tsv"})
        assert reply.status_code == 201, reply.text
        glossary_id = reply.json()["glossary_id"]

        assert _batch_translations(http, job_id) == SEGMENTS  # the echo engine: PII redacted, then restored
        docs.wait_done(handle, timeout_s=30)
        assert docs.result(handle) == DOCUMENT
        docs.close()
        listed = http.get(f"/v2/glossaries/{glossary_id}", headers=auth).json()
        assert listed["name"] == f"Contacts of {EMAIL}"
        entries = http.get(f"/v2/glossaries/{glossary_id}/entries", headers=auth).text
        assert entries.strip() == f"{EMAIL}\t{PHONE}"
        _assert_sealed(tmp_path)
    _assert_sealed(tmp_path)
