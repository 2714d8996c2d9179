"""Image files checked by content before any engine sees them: type, byte and pixel caps, truncation."""

from __future__ import annotations

import io
import struct
import zlib

import pytest
from PIL import Image

from peakgate.errors import BadRequest, InputTooLarge
from peakgate.media.image import decode_image, inspect_image
from peakgate.media.settings import MediaConfig

CONFIG = MediaConfig()


def _encoded(fmt: str, size: tuple[int, int] = (120, 40)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, "white").save(out, fmt)
    return out.getvalue()


def _png_header(width: int, height: int) -> bytes:
    """A PNG that declares width x height and holds no pixels: the header alone must refuse it."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)  # 8-bit RGB
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "TIFF"])
def test_png_jpeg_and_tiff_are_read_from_their_headers(fmt: str) -> None:
    info = inspect_image(_encoded(fmt), CONFIG)
    assert (info.format, info.width, info.height) == (fmt, 120, 40)
    assert decode_image(_encoded(fmt)).size == (120, 40)


def test_a_text_file_named_png_is_a_400() -> None:
    with pytest.raises(BadRequest, match="not a PNG, JPEG or TIFF"):
        inspect_image(b"Hello, I am plain text pretending to be photo.png\n", CONFIG)


def test_other_image_formats_are_refused() -> None:
    with pytest.raises(BadRequest, match="not a PNG, JPEG or TIFF"):
        inspect_image(_encoded("GIF"), CONFIG)


def test_a_100_megapixel_header_is_refused_before_decoding() -> None:
    with pytest.raises(InputTooLarge, match=r"100\.0 megapixels"):
        inspect_image(_png_header(10_000, 10_000), CONFIG)


def test_a_header_past_pillows_own_bomb_limit_is_still_a_413() -> None:
    with pytest.raises(InputTooLarge):
        inspect_image(_png_header(30_000, 30_000), CONFIG)


def test_a_truncated_png_passes_the_header_check_and_fails_decoding_with_a_400() -> None:
    whole = _encoded("PNG", (400, 300))
    truncated = whole[: len(whole) // 2]
    assert inspect_image(truncated, CONFIG).megapixels == pytest.approx(0.12)
    with pytest.raises(BadRequest, match="truncated or corrupt"):
        decode_image(truncated)


def test_a_png_cut_inside_its_header_is_a_400() -> None:
    with pytest.raises(BadRequest):
        inspect_image(_encoded("PNG")[:20], CONFIG)


def test_byte_cap_and_empty_file() -> None:
    with pytest.raises(InputTooLarge, match="byte limit"):
        inspect_image(_encoded("PNG"), MediaConfig(image_max_bytes=10))
    with pytest.raises(BadRequest, match="empty"):
        inspect_image(b"", CONFIG)


def test_the_sync_cap_cannot_exceed_the_pixel_cap() -> None:
    with pytest.raises(ValueError, match="image_sync_max_megapixels"):
        MediaConfig(image_max_megapixels=2.0, image_sync_max_megapixels=3.0)
