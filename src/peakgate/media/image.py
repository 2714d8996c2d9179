"""Image files, checked before any engine sees them: type by content, byte and pixel caps, truncation.

`inspect_image` runs in the server: it reads the header only (format and dimensions), so a decompression bomb
(a small file that would decode to gigabytes) is refused before a pixel is decoded. `decode_image` runs in the
media pool, where decoding may take CPU: it decodes fully, so a truncated file is refused there (400), still
before OCR sees it.
"""

from __future__ import annotations

import contextlib
import io
import warnings
from collections.abc import Iterator
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from peakgate.errors import BadRequest, InputTooLarge
from peakgate.media.settings import MediaConfig

FORMATS = ("PNG", "JPEG", "TIFF")
_MEGA = 1_000_000


@dataclass(frozen=True, slots=True)
class ImageInfo:
    format: str  # one of FORMATS
    width: int
    height: int

    @property
    def megapixels(self) -> float:
        return self.width * self.height / _MEGA


def inspect_image(data: bytes, config: MediaConfig) -> ImageInfo:
    """The image's format and size from its header; 4xx for anything not a servable PNG, JPEG or TIFF."""
    if not data:
        raise BadRequest("the `file` part is empty: upload a PNG, JPEG or TIFF image")
    if len(data) > config.image_max_bytes:
        raise InputTooLarge(f"image of {len(data)} bytes is over the {config.image_max_bytes}-byte limit")
    with _opened(data) as image:
        info = ImageInfo(str(image.format), image.width, image.height)
    if info.width <= 0 or info.height <= 0:
        raise BadRequest(f"the {info.format} header declares an empty image ({info.width}x{info.height})")
    if info.megapixels > config.image_max_megapixels:
        raise InputTooLarge(f"image of {info.width}x{info.height} pixels ({info.megapixels:.1f} megapixels) is over "
                            f"the {config.image_max_megapixels:g}-megapixel limit")
    return info


def decode_image(data: bytes) -> Image.Image:
    """Every pixel, decoded (call `inspect_image` first: this trusts the size); 400 for a truncated file."""
    with _opened(data) as image:
        try:
            image.load()
        except (OSError, SyntaxError, ValueError) as exc:  # Pillow's words for truncated or corrupt data
            raise BadRequest(f"the {image.format} image is truncated or corrupt: {exc}") from exc
        return image.convert("RGB")


@contextlib.contextmanager
def _opened(data: bytes) -> Iterator[Image.Image]:
    """`Image.open` limited to FORMATS (lazy: the header only), its errors mapped into ours."""
    try:
        with warnings.catch_warnings():
            # The pixel cap is ours (inspect_image), checked right after: Pillow's warning would only repeat it.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data), formats=FORMATS)
    except Image.DecompressionBombError as exc:
        raise InputTooLarge(f"image is far over the pixel limit: {exc}") from exc
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as exc:
        raise BadRequest("the file is not a PNG, JPEG or TIFF image (checked by its content, not its name)") from exc
    with image:
        yield image
