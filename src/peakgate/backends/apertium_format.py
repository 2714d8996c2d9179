"""Apertium's plain-text stream format, done in-process.

`apertium -u` wraps the pipeline in `apertium-destxt` / `apertium-retxt`; those cannot run in
null-flush mode, so a long-lived pipeline needs the same escaping here (checked against the CLI
in the tests).
"""

from __future__ import annotations

import re

_SPECIAL = frozenset("[]^$<>@{}\\/")
_WS_RUN = re.compile(r"\s+")
_END = ".[]"


def _escape(text: str) -> str:
    return "".join("\\" + ch if ch in _SPECIAL else ch for ch in text)


def deformat(text: str) -> str:
    """Escape stream-format characters and turn whitespace runs into superblanks, like destxt."""
    parts: list[str] = []
    pos = 0
    for match in _WS_RUN.finditer(text):
        parts.append(_escape(text[pos : match.start()]))
        run = match.group()
        parts.append(run if run == " " else f"[{run}]")
        pos = match.end()
    tail = _escape(text[pos:])
    # destxt closes with a sentence-end mark the tagger needs (retxt drops it again),
    # placed before trailing whitespace.
    if tail or not parts:
        return "".join(parts) + tail + _END
    last = parts.pop()
    return "".join(parts) + _END + last


def reformat(stream: str) -> str:
    """Drop the closing sentence-end mark and superblank brackets, then unescape, like retxt."""
    end = stream.rfind(_END)
    if end >= 0:
        stream = stream[:end] + stream[end + 1 :]
    out: list[str] = []
    escaped = False
    for ch in stream:
        if escaped:
            out.append(ch)
            escaped = False
        elif ch == "\\":
            escaped = True
        elif ch not in "[]":
            out.append(ch)
    return "".join(out)
