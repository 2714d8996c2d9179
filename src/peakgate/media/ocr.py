"""OCR with tesseract (through `tesserocr`): words with their boxes, grouped into lines and blocks.

`recognise` runs in the media pool (module-level and fed plain values, so it pickles); `find_ocr` runs in the
server and only looks at the disk, so a missing engine answers 503 without loading tesseract there.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from peakgate.errors import BackendError, BadRequest, Unavailable
from peakgate.media.image import decode_image
from peakgate.media.settings import MediaConfig

# Where Debian's tesseract-ocr-* packages put their language data (5.x first).
_DEBIAN_TESSDATA = (Path("/usr/share/tesseract-ocr/5/tessdata"), Path("/usr/share/tesseract-ocr/4.00/tessdata"))
# peakgate's language codes -> tesseract's.
_TESSERACT_LANGUAGE = {"en": "eng", "es": "spa", "ca": "cat", "fr": "fra", "pt": "por", "it": "ita", "gl": "glg",
                       "de": "deu"}


@dataclass(frozen=True, slots=True)
class Box:
    x: int
    y: int
    w: int
    h: int

    def union(self, other: Box) -> Box:
        x, y = min(self.x, other.x), min(self.y, other.y)
        return Box(x, y, max(self.x + self.w, other.x + other.w) - x, max(self.y + self.h, other.y + other.h) - y)


@dataclass(frozen=True, slots=True)
class Word:
    text: str
    box: Box
    block: int  # ordinal of the block it is in
    line: int  # ordinal of the line it is in, across the page


@dataclass(frozen=True, slots=True)
class Line:
    text: str
    box: Box


@dataclass(frozen=True, slots=True)
class Block:
    box: Box
    lines: tuple[Line, ...]


@dataclass(frozen=True, slots=True)
class OcrSetup:
    tessdata: str
    languages: frozenset[str]  # tesseract's codes with data installed

    def languages_for(self, source: str | None, auto: str) -> str:
        """What tesseract reads for a request's source language (None: auto)."""
        if source is None:
            return auto
        code = _TESSERACT_LANGUAGE.get(source)
        if code is None or code not in self.languages:
            served = sorted(k for k, v in _TESSERACT_LANGUAGE.items() if v in self.languages)
            raise BadRequest(f"no OCR language data for source {source!r}; images are read in {served} or 'auto'")
        return code


def find_ocr(config: MediaConfig) -> OcrSetup:
    """The engine and its data on this machine, or Unavailable (503) saying what is missing."""
    if importlib.util.find_spec("tesserocr") is None:
        raise Unavailable("image translation is unavailable: the tesserocr OCR binding is not installed")
    candidates = (config.tessdata_dir,) if config.tessdata_dir is not None else _DEBIAN_TESSDATA
    for directory in candidates:
        languages = frozenset(p.stem for p in directory.glob("*.traineddata")) if directory.is_dir() else frozenset()
        if languages:
            return OcrSetup(str(directory), languages)
    raise Unavailable("image translation is unavailable: no tesseract language data (install tesseract-ocr-eng)")


def recognise(data: bytes, tessdata: str, languages: str, min_confidence: float) -> list[Block]:
    """The image's text as blocks of lines (in the pool: decodes, then runs tesseract)."""
    import tesserocr  # loaded in the pool's processes only

    image = decode_image(data)
    try:
        with tesserocr.PyTessBaseAPI(path=tessdata, lang=languages) as api:
            api.SetImage(image)
            api.Recognize()
            return group(_words(tesserocr, api.GetIterator(), min_confidence))
    except RuntimeError as exc:  # tesserocr's one error type: data it cannot load, an image it cannot take
        raise BackendError(f"OCR failed: {exc}") from exc


def _words(tesserocr: Any, iterator: Any, min_confidence: float) -> Iterator[Word]:
    """Each recognised word with its block and line ordinals (tesseract marks where blocks and lines begin)."""
    word, block, line = tesserocr.RIL.WORD, -1, -1
    for item in tesserocr.iterate_level(iterator, word):
        block += item.IsAtBeginningOf(tesserocr.RIL.BLOCK)
        line += item.IsAtBeginningOf(tesserocr.RIL.TEXTLINE)
        try:
            text = item.GetUTF8Text(word)
        except RuntimeError:  # "No text returned": a page with nothing on it still yields one empty position
            continue
        bounds = item.BoundingBox(word)
        if text.strip() and bounds and item.Confidence(word) >= min_confidence:
            x1, y1, x2, y2 = bounds
            yield Word(text.strip(), Box(x1, y1, x2 - x1, y2 - y1), max(block, 0), max(line, 0))


def group(words: Iterable[Word]) -> list[Block]:
    """Words (in reading order) into lines, lines into blocks; each box the union of what it holds."""
    blocks: dict[int, dict[int, list[Word]]] = {}
    for word in words:
        blocks.setdefault(word.block, {}).setdefault(word.line, []).append(word)
    out: list[Block] = []
    for lines in blocks.values():
        built = tuple(_line(ws) for ws in lines.values())
        out.append(Block(_union(line.box for line in built), built))
    return out


def _line(words: Sequence[Word]) -> Line:
    return Line(" ".join(w.text for w in words), _union(w.box for w in words))


def _union(boxes: Iterable[Box]) -> Box:
    it = iter(boxes)
    box = next(it)
    for other in it:
        box = box.union(other)
    return box
