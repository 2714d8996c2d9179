"""The overlay: font sizes fitted to boxes, each box painted over with its translation."""

from __future__ import annotations

import io
from collections.abc import Callable

from PIL import Image, ImageDraw

from peakgate.media.ocr import Box
from peakgate.media.overlay import MIN_FONT_PX, fit_size, render_overlay


def _linear(chars: int) -> Callable[[int], tuple[int, int]]:
    return lambda size: (chars * size // 2, size)  # a glyph half as wide as it is tall


def test_the_largest_size_that_fits_both_width_and_height() -> None:
    assert fit_size(_linear(10), Box(0, 0, 200, 30)) == 30  # height bound: 10 * 30 / 2 = 150 <= 200
    assert fit_size(_linear(20), Box(0, 0, 200, 30)) == 20  # width bound: 20 * 20 / 2 = 200
    assert fit_size(_linear(200), Box(0, 0, 50, 30)) == MIN_FONT_PX  # too long: smallest size, overflows


def test_the_translation_replaces_the_original_text_in_its_box() -> None:
    image = Image.new("RGB", (300, 100), (240, 230, 200))
    ImageDraw.Draw(image).rectangle((20, 20, 200, 50), fill=(0, 0, 0))  # "text": a black bar
    source = io.BytesIO()
    image.save(source, "PNG")
    drawn = Image.open(io.BytesIO(render_overlay(source.getvalue(), [(Box(20, 20, 180, 30), "Hola")]))).convert("RGB")
    assert drawn.size == (300, 100)
    box = drawn.crop((20, 20, 201, 51))
    colours = dict((c, n) for n, c in box.getcolors(maxcolors=box.width * box.height) or [])
    # The bar's black (the box's most common colour) became the background; the text is drawn in white on it.
    assert max(colours, key=lambda c: colours[c]) == (0, 0, 0)
    assert (255, 255, 255) in colours
    assert drawn.getpixel((250, 80)) == (240, 230, 200)  # outside every box: untouched
