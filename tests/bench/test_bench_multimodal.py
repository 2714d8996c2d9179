"""Smoke test for bench/multimodal.py: the rendered sign reads back, and a tiny run on the echo engine prints its
p99 ratio with the image flood's figures."""

from __future__ import annotations

import io
import re
from collections import Counter

import pytest
from PIL import Image

from bench import multimodal
from peakgate.errors import Unavailable
from peakgate.media.ocr import find_ocr, recognise
from peakgate.media.settings import MediaConfig


def _ocr_or_skip() -> str:
    try:
        return find_ocr(MediaConfig()).tessdata
    except Unavailable as exc:
        pytest.skip(exc.message)


def test_the_rendered_sign_is_a_png_that_tesseract_reads_line_by_line() -> None:
    png = multimodal.render_image(3)
    assert Image.open(io.BytesIO(png)).size == (1100, 40 + 56 * 3)
    lines = [line.text for block in recognise(png, _ocr_or_skip(), "eng", 30.0) for line in block.lines]
    assert lines == list(multimodal.LINES[:3])


def test_a_flood_line_counts_successes_and_refusals() -> None:
    flood = multimodal.Flood("/v1/image", Counter({200: 4, 503: 2}), [0.5, 1.0, 1.5, 2.0])
    assert flood.line(2.0) == "/v1/image: 4 done (2.00/s, p50 1.25 s), refused/other {503: 2}"


def test_the_server_runs_with_the_cache_off_and_the_given_media_settings() -> None:
    config = multimodal.server_config(True, {"nice": 5})
    assert config["cache"] == {"enabled": False} and config["media"] == {"nice": 5}


def test_a_tiny_run_on_the_echo_engine_prints_the_p99_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    _ocr_or_skip()
    assert multimodal.main(["--echo", "--duration", "1", "--rounds", "1", "--text-clients", "1",
                            "--image-clients", "1", "--speech-clients", "0", "--image-lines", "1"]) == 0
    out = capsys.readouterr().out
    assert re.search(r"round 1: text alone p50 \d+ ms p99 \d+ ms \(\d+ req, 0 errors\)", out), out
    assert re.search(r"/v1/image: [1-9]\d* done", out), out
    assert re.search(r"interactive text p99 with flood / alone: median \d+\.\d\dx over 1 round", out), out
