"""The translation drawn over the original: each line's box filled with its own background, the translated
text fitted into it (the largest font size whose text fits the box). Runs in the media pool (decodes pixels).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Callable, Sequence
from pathlib import Path

from PIL import Image, ImageDraw, ImageFont

from peakgate.media.image import decode_image
from peakgate.media.ocr import Box

# DejaVu (Debian's fonts-dejavu-core) covers the Latin, Greek and Cyrillic scripts peakgate translates into.
_FONT_PATHS = (Path("/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf"),)
MIN_FONT_PX = 6
_Font = ImageFont.FreeTypeFont | ImageFont.ImageFont


def fit_size(measure: Callable[[int], tuple[int, int]], box: Box, min_size: int = MIN_FONT_PX) -> int:
    """The largest font size (pixels) at which `measure(size) -> (width, height)` fits the box; at least
    `min_size` (text longer than its box then overflows to the right rather than vanishing)."""
    low, high = min_size, max(min_size, box.h)
    while low < high:  # binary search: text extent grows with the size
        mid = (low + high + 1) // 2
        width, height = measure(mid)
        if width <= box.w and height <= box.h:
            low = mid
        else:
            high = mid - 1
    return low


def render_overlay(data: bytes, lines: Sequence[tuple[Box, str]]) -> bytes:
    """The image with each (box, translated text) drawn over its box, as PNG."""
    image = decode_image(data)
    draw = ImageDraw.Draw(image)
    for box, text in lines:
        background = _background(image, box)
        draw.rectangle((box.x, box.y, box.x + box.w, box.y + box.h), fill=background)
        size = fit_size(functools.partial(_extent_at, draw, text), box)
        draw.text((box.x, box.y), text, font=_font(size), fill=_ink(background))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _extent_at(draw: ImageDraw.ImageDraw, text: str, size: int) -> tuple[int, int]:
    left, top, right, bottom = draw.textbbox((0, 0), text, font=_font(size))
    return int(right - min(left, 0)), int(bottom - min(top, 0))


def _font(size: int) -> _Font:
    for path in _FONT_PATHS:
        if path.is_file():
            return ImageFont.truetype(str(path), size)
    return ImageFont.load_default(size)


def _background(image: Image.Image, box: Box) -> tuple[int, int, int]:
    """The box's most common colour: the paper the text was printed on."""
    region = image.crop((box.x, box.y, box.x + max(box.w, 1), box.y + max(box.h, 1)))
    colours = region.getcolors(maxcolors=region.width * region.height) or [(1, (255, 255, 255))]
    _count, colour = max(colours, key=lambda c: c[0])
    r, g, b = colour if isinstance(colour, tuple) else (colour, colour, colour)
    return int(r), int(g), int(b)


def _ink(background: tuple[int, int, int]) -> tuple[int, int, int]:
    r, g, b = background
    return (0, 0, 0) if 0.299 * r + 0.587 * g + 0.114 * b >= 128 else (255, 255, 255)
