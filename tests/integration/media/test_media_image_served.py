"""POST /v1/image against the real served process: real tesseract reads a rendered English sentence, a real
Apertium engine translates it; bad files answer 4xx and leave the server healthy (issue 25)."""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image, ImageDraw, ImageFont

from bench._http import Server, serve
from peakgate.errors import Unavailable
from peakgate.media.ocr import find_ocr
from peakgate.media.settings import MediaConfig

KEY = "image-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")
SENTENCE = "The house is very small and the dog is happy."


@pytest.fixture(scope="module")
def server(apertium_config: dict[str, object]) -> Iterator[Server]:
    try:
        find_ocr(MediaConfig())
    except Unavailable as exc:
        pytest.skip(exc.message)
    if not DEJAVU.is_file():
        pytest.skip("fonts-dejavu-core is not installed")
    with serve({**apertium_config, "keys": [{"key": KEY, "tenant": "acme"}]}) as running:
        yield running


def _sentence_png(size: tuple[int, int] = (900, 120), font_px: int = 30) -> bytes:
    image = Image.new("RGB", size, "white")
    ImageDraw.Draw(image).text((24, 36), SENTENCE, font=ImageFont.truetype(str(DEJAVU), font_px), fill="black")
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _post(server: Server, data: bytes, name: str = "sign.png", **fields: str) -> httpx.Response:
    return httpx.post(f"{server.url}/v1/image", headers=AUTH, timeout=60,
                      files={"file": (name, data, "image/png")}, data={"target": "es", **fields})


def test_a_rendered_english_sentence_is_recognised_and_translated(server: Server) -> None:
    reply = _post(server, _sentence_png(), source="en")
    assert reply.status_code == 200, reply.text
    body = reply.json()
    lines = [line for block in body["blocks"] for line in block["lines"]]
    assert len(lines) == 1
    assert lines[0]["text"].split() == SENTENCE.split()
    translation = lines[0]["translation"]
    assert translation and translation != lines[0]["text"]
    assert "casa" in translation.lower()  # Apertium: "La casa es muy pequeña..."
    assert body["model"] == "apertium-en-es" and body["billed_characters"] == len(SENTENCE)
    x, y, w, h = lines[0]["box"]
    assert 15 <= x <= 35 and 30 <= y <= 50 and w > 400 and 15 <= h <= 45


def test_the_source_language_is_detected_when_left_out(server: Server) -> None:
    reply = _post(server, _sentence_png(), source="auto")
    assert reply.status_code == 200, reply.text
    assert reply.json()["detected_source"] == "en"
    assert "casa" in reply.json()["blocks"][0]["lines"][0]["translation"].lower()


def test_format_png_answers_the_image_with_the_translation_drawn(server: Server) -> None:
    original = _sentence_png()
    reply = _post(server, original, source="en", format="png")
    assert reply.status_code == 200, reply.text
    assert reply.headers["content-type"] == "image/png"
    drawn = Image.open(io.BytesIO(reply.content))
    assert drawn.size == (900, 120) and reply.content != original


def test_an_image_over_4_megapixels_is_a_job_that_ends_translated_with_its_overlay(
        server: Server, finished_job: Callable[..., dict[str, Any]]) -> None:
    status = finished_job(server, _post(server, _sentence_png((2100, 2000), 60), source="en", overlay="true"), AUTH)
    assert status["status"] == "done", status
    lines = [line for block in status["result"]["blocks"] for line in block["lines"]]
    assert len(lines) == 1 and lines[0]["text"].split() == SENTENCE.split()
    assert "casa" in lines[0]["translation"].lower()  # Apertium: "La casa es muy pequeña..."
    assert status["billed_characters"] == len(SENTENCE)
    assert (status["result"]["width"], status["result"]["height"]) == (2100, 2000)
    drawn = httpx.get(f"{server.url}{status['overlay_url']}", headers=AUTH, timeout=60)
    assert drawn.status_code == 200 and drawn.headers["content-type"] == "image/png"
    assert Image.open(io.BytesIO(drawn.content)).size == (2100, 2000)


@pytest.mark.parametrize(("data", "name", "status", "words"), [
    (b"", "empty.png", 400, "empty"),
    (b"just some text, not a picture\n" * 10, "photo.png", 400, "not a PNG, JPEG or TIFF"),
])
def test_non_images_are_a_400(server: Server, data: bytes, name: str, status: int, words: str) -> None:
    reply = _post(server, data, name)
    assert reply.status_code == status, reply.text
    assert words in reply.json()["error"]["message"]


def test_a_truncated_png_is_a_400(server: Server) -> None:
    whole = _sentence_png()
    reply = _post(server, whole[: len(whole) // 2])
    assert reply.status_code == 400, reply.text
    assert "truncated" in reply.json()["error"]["message"]


def test_a_100_megapixel_png_is_a_413_before_decoding(server: Server) -> None:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 10_000, 10_000, 8, 2, 0, 0, 0))
    reply = _post(server, header + chunk(b"IEND", b""))
    assert reply.status_code == 413, reply.text
    assert "megapixel" in reply.json()["error"]["message"]


def test_the_server_stays_healthy_and_counts_its_media_work(server: Server) -> None:
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert _post(server, _sentence_png(), source="en").status_code == 200  # still serving images after bad input
    metrics = httpx.get(f"{server.url}/metrics").text
    assert 'peakgate_media_seconds_count{kind="ocr"}' in metrics
