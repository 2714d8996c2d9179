from __future__ import annotations

import io
import xml.etree.ElementTree as ET

import pytest
from memory_fakes import entry

from peakgate.memory.tmx import TmxError, TmxOptions, flatten_seg, read_tmx
from peakgate.memory.tmx_writer import tmx_date, write_tmx, xml_text

OPTS = TmxOptions(created_at="2026-01-01T00:00:00+00:00", max_entry_chars=40)


def tmx(body: str, header: str = 'srclang="en-US"', version: str = "1.4") -> io.BytesIO:
    doc = (f'<?xml version="1.0" encoding="UTF-8"?>\n<tmx version="{version}"><header creationtool="t"'
           f' {header} segtype="sentence" adminlang="en" datatype="plaintext" o-tmf="x"/>'
           f"<body>{body}</body></tmx>")
    return io.BytesIO(doc.encode())


def tuv(lang: str, seg: str | None, attr: str = "xml:lang") -> str:
    return f'<tuv {attr}="{lang}">' + ("" if seg is None else f"<seg>{seg}</seg>") + "</tuv>"


def test_flatten_drops_native_codes_and_keeps_text() -> None:
    seg = ET.fromstring('<seg>Click <bpt i="1">&lt;b&gt;</bpt>Save<ept i="1">&lt;/b&gt;</ept> now<ph x="2"/>!'
                        " <hi>really</hi></seg>")
    assert flatten_seg(seg) == "Click Save now! really"


def test_reads_pairs_with_header_srclang_and_creationdate() -> None:
    body = f'<tu creationdate="20250102T030405Z">{tuv("en-US", "Open file")}{tuv("es-ES", "Abrir fichero")}</tu>'
    (tu,) = list(read_tmx(tmx(body), OPTS))
    (e,) = tu.entries
    assert (e.source_lang, e.target_lang, e.source, e.target) == ("en", "es", "Open file", "Abrir fichero")
    assert e.origin == "import" and e.created_at == "2025-01-02T03:04:05+00:00" and tu.skips == ()


def test_tmx_1_1_lang_attribute_and_multiple_targets() -> None:
    body = f'<tu>{tuv("EN", "Yes", "lang")}{tuv("ES", "Sí", "lang")}{tuv("FR", "Oui", "lang")}</tu>'
    (tu,) = list(read_tmx(tmx(body, 'srclang="EN"', "1.1"), OPTS))
    assert [(e.target_lang, e.target) for e in tu.entries] == [("es", "Sí"), ("fr", "Oui")]


def test_all_srclang_takes_the_first_tuv_as_source() -> None:
    (tu,) = list(read_tmx(tmx(f"<tu>{tuv('es', 'Hola')}{tuv('en', 'Hello')}</tu>", 'srclang="*all*"'), OPTS))
    assert [(e.source_lang, e.source, e.target) for e in tu.entries] == [("es", "Hola", "Hello")]


@pytest.mark.parametrize(("body", "reason"), [
    (f"<tu>{tuv('en-US', 'Hi')}{tuv('español', 'Hola')}</tu>", "invalid_lang"),
    (f"<tu>{tuv('en_US', 'Hi')}{tuv('es', 'Hola')}</tu>", "no_source"),
    (f"<tu>{tuv('en-US', 'Hi')}{tuv('es', None)}</tu>", "missing_seg"),
    (f"<tu>{tuv('en-US', None)}{tuv('es', 'Hola')}</tu>", "missing_seg"),
    (f"<tu>{tuv('en-US', '  ')}{tuv('es', 'Hola')}</tu>", "empty"),
    (f"<tu>{tuv('en-US', 'x' * 41)}{tuv('es', 'Hola')}</tu>", "too_long"),
    (f"<tu>{tuv('en-US', 'Hi')}{tuv('es', 'y' * 41)}</tu>", "too_long"),
    (f"<tu>{tuv('en-US', 'Hi')}</tu>", "no_target"),
    (f"<tu>{tuv('en-US', 'Color')}{tuv('en-GB', 'Colour')}</tu>", "same_lang"),
])
def test_bad_entries_are_skips(body: str, reason: str) -> None:
    (tu,) = list(read_tmx(tmx(body), OPTS))
    assert tu.entries == () and tu.skips == (reason,)


def test_malformed_xml_raises_with_line_info() -> None:
    bad = io.BytesIO(b'<tmx version="1.4"><header srclang="en"/>\n<body>\n<tu><tuv xml:lang="en"><seg>x</tuv>')
    with pytest.raises(TmxError, match=r"bad\.tmx:3:\d+: malformed TMX"):
        list(read_tmx(bad, OPTS, name="bad.tmx"))


def test_writer_escapes_and_roundtrips() -> None:
    tricky = entry('Use <b> & "quotes"\x07 > here', "Usa <b> & «comillas» > aquí", model="m&m", origin="model")
    out = io.StringIO()
    assert write_tmx(out, [tricky, entry("Plain", "Llano", tenant="acme")], srclang="en") == 2
    text = out.getvalue()
    root = ET.fromstring(text.encode())  # well-formed
    header = root.find("header")
    assert header is not None and header.get("creationtool") == "peakgate" and header.get("o-tmf")
    assert header.get("srclang") == "en" and header.get("segtype") == "sentence"
    tus = [t for tu in read_tmx(io.BytesIO(text.encode()), TmxOptions()) for t in tu.entries]
    assert [(e.source, e.target) for e in tus] == [('Use <b> & "quotes" > here', "Usa <b> & «comillas» > aquí"),
                                                   ("Plain", "Llano")]
    assert (tus[0].origin, tus[0].model, tus[1].origin) == ("model", "m&m", "human")
    assert tus[0].created_at == tricky.created_at


def test_dates_and_text_helpers() -> None:
    assert tmx_date("2026-01-02T03:04:05+01:00") == "20260102T020405Z"
    assert tmx_date("2026-01-02T03:04:05") == "20260102T030405Z"
    assert tmx_date("yesterday") is None
    assert xml_text("a\r<b>") == "a&#13;&lt;b&gt;"


def test_source_tuv_falls_back_to_the_primary_subtag() -> None:
    body = f"<tu>{tuv('es-MX', 'Hola')}{tuv('en-GB', 'Hello')}</tu>"
    (tu,) = list(read_tmx(tmx(body, 'srclang="en"'), OPTS))
    assert [(e.source_lang, e.source, e.target_lang) for e in tu.entries] == [("en", "Hello", "es")]


def test_non_tmx_namespaced_tags_are_still_read() -> None:
    doc = (b'<tmx xmlns="urn:x" version="1.4"><header srclang="en"/><body><tu><tuv xml:lang="en"><seg>A</seg>'
           b'</tuv><tuv xml:lang="de"><seg>B</seg></tuv></tu></body></tmx>')
    (tu,) = list(read_tmx(io.BytesIO(doc), OPTS))
    assert [(e.source, e.target) for e in tu.entries] == [("A", "B")]
