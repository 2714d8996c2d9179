"""Streaming TMX 1.4 export: one <tu> per entry, written as it is read, so memory stays flat."""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TextIO
from xml.sax.saxutils import escape, quoteattr

from peakgate import __version__
from peakgate.memory.entry import TmEntry

TMX_DATE = "%Y%m%dT%H%M%SZ"
# Characters XML 1.0 cannot carry at all, not even as references.
_NOT_XML = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
_ESCAPES = {"\r": "&#13;"}  # a bare CR would be read back as LF


def xml_text(text: str) -> str:
    return escape(_NOT_XML.sub("", text), _ESCAPES)


def xml_attr(text: str) -> str:
    return quoteattr(_NOT_XML.sub("", text), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def tmx_date(iso: str) -> str | None:
    try:
        stamp = datetime.fromisoformat(iso)
    except ValueError:
        return None
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    return stamp.astimezone(UTC).strftime(TMX_DATE)


def header(*, srclang: str = "*all*", adminlang: str = "en", datatype: str = "plaintext") -> str:
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<tmx version="1.4">\n'
        f'  <header creationtool="peakgate" creationtoolversion={xml_attr(__version__)} segtype="sentence"'
        f' o-tmf="peakgate" adminlang={xml_attr(adminlang)} srclang={xml_attr(srclang)}'
        f' datatype={xml_attr(datatype)}/>\n'
        "  <body>\n"
    )


FOOTER = "  </body>\n</tmx>\n"


def tu(entry: TmEntry) -> str:
    date = tmx_date(entry.created_at) if entry.created_at else None
    attrs = f" srclang={xml_attr(entry.source_lang)}" + (f' creationdate="{date}"' if date else "")
    props = [f'<prop type="x-peakgate-origin">{xml_text(entry.origin)}</prop>']
    if entry.model:
        props.append(f'<prop type="x-peakgate-model">{xml_text(entry.model)}</prop>')
    if entry.tenant:
        props.append(f'<prop type="x-peakgate-tenant">{xml_text(entry.tenant)}</prop>')
    return (
        f"    <tu{attrs}>{''.join(props)}"
        f"<tuv xml:lang={xml_attr(entry.source_lang)}><seg>{xml_text(entry.source)}</seg></tuv>"
        f"<tuv xml:lang={xml_attr(entry.target_lang)}><seg>{xml_text(entry.target)}</seg></tuv></tu>\n"
    )


def write_tmx(out: TextIO, entries: Iterable[TmEntry], *, srclang: str = "*all*", adminlang: str = "en") -> int:
    """Write a complete TMX document to `out` (opened as UTF-8 text); returns the number of <tu> written."""
    out.write(header(srclang=srclang, adminlang=adminlang))
    written = 0
    for entry in entries:
        out.write(tu(entry))
        written += 1
    out.write(FOOTER)
    return written
