"""What a caller asks of tag handling: DeepL's parameters, parsed once per request."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, Protocol

from peakgate.errors import BadRequest

Mode = Literal["html", "xml"]
MODES: tuple[Mode, ...] = ("html", "xml")


@dataclass(frozen=True, slots=True)
class MarkupOptions:
    mode: Mode
    splitting_tags: frozenset[str] = field(default_factory=frozenset)  # always end a sentence
    non_splitting_tags: frozenset[str] = field(default_factory=frozenset)  # never end one (inline)
    ignore_tags: frozenset[str] = field(default_factory=frozenset)  # their content is not translated
    outline_detection: bool = True  # XML: find the structure tags automatically (off: only splitting_tags)


class TagFields(Protocol):
    """DeepL's tag-handling fields, as a request body carries them."""

    @property
    def tag_handling(self) -> str | None: ...
    @property
    def splitting_tags(self) -> str | list[str] | None: ...
    @property
    def non_splitting_tags(self) -> str | list[str] | None: ...
    @property
    def ignore_tags(self) -> str | list[str] | None: ...
    @property
    def outline_detection(self) -> bool: ...


def tag_list(value: str | list[str] | None, *, lower: bool = False) -> frozenset[str]:
    """"a,b" or ["a", "b,c"] (a comma-separated list, repeated or not) as a set of tag names."""
    if value is None:
        return frozenset()
    parts = [value] if isinstance(value, str) else value
    names = (name.strip() for part in parts for name in part.split(","))
    return frozenset(name.lower() if lower else name for name in names if name)


def markup_options(
    mode: str, *, splitting_tags: str | list[str] | None = None, non_splitting_tags: str | list[str] | None = None,
    ignore_tags: str | list[str] | None = None, outline_detection: bool = True,
) -> MarkupOptions:
    """The options for `mode` ("html" or "xml", any case); BadRequest in DeepL's words for another mode."""
    folded = mode.strip().lower()
    if folded not in MODES:
        raise BadRequest(f"Parameter 'tag_handling' is invalid: {mode!r} is not one of html, xml")
    html = folded == "html"
    return MarkupOptions(
        "html" if html else "xml", tag_list(splitting_tags, lower=html), tag_list(non_splitting_tags, lower=html),
        tag_list(ignore_tags, lower=html), outline_detection,
    )


def options_from(fields: TagFields) -> MarkupOptions | None:
    """A body's tag handling: None without `tag_handling` (plain text)."""
    if fields.tag_handling is None:
        return None
    return markup_options(fields.tag_handling, splitting_tags=fields.splitting_tags,
                          non_splitting_tags=fields.non_splitting_tags, ignore_tags=fields.ignore_tags,
                          outline_detection=fields.outline_detection)


def format_options(text_format: str) -> MarkupOptions | None:
    """LibreTranslate's `format`: "text" (None) or "html"; BadRequest for anything else."""
    folded = text_format.strip().lower()
    if folded not in {"text", "html"}:
        raise BadRequest(f"format {text_format!r} is not supported: use text or html")
    return MarkupOptions("html") if folded == "html" else None
