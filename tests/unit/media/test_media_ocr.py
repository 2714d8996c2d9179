"""OCR: words grouped into lines and blocks, language choice, the missing-engine answer, and real tesseract."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image, ImageDraw, ImageFont

from peakgate.errors import BadRequest, Unavailable
from peakgate.media.ocr import Box, OcrSetup, Word, find_ocr, group, recognise
from peakgate.media.settings import MediaConfig

DEJAVU = Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf")


def test_words_group_into_lines_and_blocks_with_union_boxes() -> None:
    words = [Word("Hello", Box(10, 10, 50, 20), 0, 0), Word("world", Box(70, 12, 60, 20), 0, 0),
             Word("again", Box(10, 40, 55, 20), 0, 1), Word("Second", Box(10, 200, 80, 25), 1, 2)]
    blocks = group(words)
    assert [[line.text for line in b.lines] for b in blocks] == [["Hello world", "again"], ["Second"]]
    assert blocks[0].lines[0].box == Box(10, 10, 120, 22)
    assert blocks[0].box == Box(10, 10, 120, 50)
    assert blocks[1].box == Box(10, 200, 80, 25)
    assert group([]) == []


def test_languages_follow_the_source_or_the_auto_setting() -> None:
    setup = OcrSetup("/data", frozenset({"eng", "spa"}))
    assert setup.languages_for(None, "eng+spa") == "eng+spa"
    assert setup.languages_for("es", "eng") == "spa"
    with pytest.raises(BadRequest, match="no OCR language data for source 'fr'"):
        setup.languages_for("fr", "eng")


def test_missing_language_data_is_unavailable(tmp_path: Path) -> None:
    with pytest.raises(Unavailable, match="no tesseract language data"):
        find_ocr(MediaConfig(tessdata_dir=tmp_path))


def test_real_tesseract_reads_a_rendered_sentence() -> None:
    try:
        setup = find_ocr(MediaConfig())
    except Unavailable as exc:
        pytest.skip(exc.message)
    if not DEJAVU.is_file():
        pytest.skip("fonts-dejavu-core is not installed")
    image = Image.new("RGB", (760, 140), "white")
    draw = ImageDraw.Draw(image)
    font = ImageFont.truetype(str(DEJAVU), 30)
    draw.text((20, 20), "The house is very small.", font=font, fill="black")
    draw.text((20, 80), "My brother eats bread.", font=font, fill="black")
    png = io.BytesIO()
    image.save(png, "PNG")
    blocks = recognise(png.getvalue(), setup.tessdata, "eng", 30.0)
    lines = [line for block in blocks for line in block.lines]
    assert [line.text for line in lines] == ["The house is very small.", "My brother eats bread."]
    assert lines[0].box.y < lines[1].box.y and 15 <= lines[0].box.x <= 30
