"""TMX 1.4 (and 1.1) streaming import.

`iterparse` plus clearing each processed <tu> keeps memory flat however large the file. Each <tu> yields a
`TuResult`: the entries it produced (one per target <tuv>) and the reasons any were skipped. Bad entries are
skips, never fatal; malformed XML raises `TmxError` with the line and column. `import_tmx` feeds one file to ONE
store transaction: a file that fails half-way commits nothing (all-or-nothing per file is the simplest thing to
defend; re-running the fixed file is then always safe).

Inline markup: native-code elements (<bpt> <ept> <ph> <it> <ut>) are dropped with their content, their tails
kept; <hi> and other wrappers keep their text. Whitespace is collapsed, as everywhere in the TM.
ElementTree never fetches external entities, and expat >= 2.4 bounds entity expansion (billion laughs).
"""

from __future__ import annotations

import dataclasses
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, cast

from peakgate.errors import BadRequest
from peakgate.memory.entry import AddResult, Origin, TmEntry
from peakgate.memory.store import TmStore
from peakgate.memory.text import lang_key, normalize, valid_lang

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
TMX_DATE = "%Y%m%dT%H%M%SZ"
_CODES = frozenset({"bpt", "ept", "ph", "it", "ut"})
_ORIGINS: frozenset[str] = frozenset({"human", "model", "import", "correction"})
_PROGRESS_EVERY = 256


class TmxError(BadRequest):
    code = "tmx_error"


@dataclass(frozen=True, slots=True)
class TmxOptions:
    tenant: str = ""
    origin: Origin = "import"
    max_entry_chars: int = 5_000
    keep_region: bool = False  # False: "en-US" is stored as "en", where serving pairs look
    created_at: str = ""  # used when a <tu> has no creationdate
    # Applied to every source and target before storing: PII de-identification, so imported rows match the
    # redacted queries they will be looked up with, and raw values never reach the database.
    transform: Callable[[str], str] | None = None


@dataclass(frozen=True, slots=True)
class TuResult:
    entries: tuple[TmEntry, ...]
    skips: tuple[str, ...]  # reasons: no_source, missing_seg, invalid_lang, empty, too_long, no_target, same_lang


@dataclass(frozen=True, slots=True)
class ImportProgress:
    tus: int
    entries: int
    skipped: int
    bytes_read: int
    total_bytes: int


@dataclass(frozen=True, slots=True)
class ImportReport:
    path: str
    tus: int
    added: AddResult
    skipped: dict[str, int] = field(default_factory=dict)

    @property
    def skipped_total(self) -> int:
        return sum(self.skipped.values())


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def flatten_seg(seg: ET.Element) -> str:
    parts = [seg.text or ""]
    for child in seg:
        _walk(child, parts)
    return normalize("".join(parts))


def _walk(el: ET.Element, parts: list[str]) -> None:
    if _local(el.tag) not in _CODES:
        parts.append(el.text or "")
        for child in el:
            _walk(child, parts)
    parts.append(el.tail or "")


def _iso_date(value: str | None, default: str) -> str:
    if not value:
        return default
    try:
        return datetime.strptime(value, TMX_DATE).replace(tzinfo=UTC).isoformat()
    except ValueError:
        return default


def _props(tu: ET.Element) -> dict[str, str]:
    return {p.get("type", ""): (p.text or "") for p in tu if _local(p.tag) == "prop"}


def _tuvs(tu: ET.Element) -> list[tuple[str | None, str | None]]:
    """(language, flattened seg text or None when the <seg> is missing) per <tuv>."""
    found: list[tuple[str | None, str | None]] = []
    for tuv in tu:
        if _local(tuv.tag) == "tuv":
            seg = next((c for c in tuv if _local(c.tag) == "seg"), None)
            found.append((tuv.get(XML_LANG) or tuv.get("lang"), None if seg is None else flatten_seg(seg)))
    return found


def _entry_factory(tu: ET.Element, opts: TmxOptions) -> Callable[[str, str, str, str], TmEntry]:
    # Our own exports carry origin/model props; honouring them makes export -> import a faithful restore.
    props = _props(tu)
    raw = props.get("x-peakgate-origin", "")
    origin = cast(Origin, raw) if raw in _ORIGINS else opts.origin
    model = props.get("x-peakgate-model") or None
    created = _iso_date(tu.get("creationdate"), opts.created_at)

    def make(source_lang: str, target_lang: str, source: str, target: str) -> TmEntry:
        return TmEntry(source_lang, target_lang, source, target, opts.tenant, origin, model, None, created)

    return make


def _source_tuv(tuvs: list[tuple[str | None, str | None]],
                srclang: str | None) -> tuple[str | None, str | None] | None:
    """The tuv in `srclang`; failing an exact (case-blind) match, the first with the same primary subtag."""
    if not srclang:
        return None
    want = srclang.lower()
    exact = next((t for t in tuvs if t[0] and t[0].lower() == want), None)
    if exact is not None:
        return exact
    primary = want.split("-", 1)[0]
    return next((t for t in tuvs if t[0] and t[0].lower().split("-", 1)[0] == primary), None)


def parse_tu(tu: ET.Element, header_srclang: str | None, opts: TmxOptions) -> TuResult:
    tuvs = _tuvs(tu)
    srclang = tu.get("srclang") or header_srclang
    if not srclang or srclang.lower() == "*all*":
        srclang = tuvs[0][0] if tuvs else None
    src = _source_tuv(tuvs, srclang)
    if src is None:
        return TuResult((), ("no_source",))
    src_lang, src_text = src
    reason = _check(src_lang, src_text, opts)
    if reason or src_lang is None or src_text is None:
        return TuResult((), (reason or "missing_seg",))
    make = _entry_factory(tu, opts)
    source_lang = lang_key(src_lang, keep_region=opts.keep_region)
    entries: list[TmEntry] = []
    skips: list[str] = []
    for lang, text in tuvs:
        if (lang, text) == src:
            continue
        reason = _check(lang, text, opts)
        if not reason and lang is not None and text is not None:
            target_lang = lang_key(lang, keep_region=opts.keep_region)
            if target_lang != source_lang:
                entries.append(make(source_lang, target_lang, src_text, text))
                continue
            reason = "same_lang"
        skips.append(reason)
    if not entries and not skips:
        skips.append("no_target")
    return TuResult(tuple(entries), tuple(skips))


def _check(lang: str | None, text: str | None, opts: TmxOptions) -> str:
    if not lang or not valid_lang(lang):
        return "invalid_lang"
    if text is None:
        return "missing_seg"
    if not text:
        return "empty"
    if len(text) > opts.max_entry_chars:
        return "too_long"
    return ""


def read_tmx(fh: BinaryIO, opts: TmxOptions, *, name: str = "<tmx>") -> Iterator[TuResult]:
    """One `TuResult` per <tu>, streaming; raises TmxError on malformed XML or a non-TMX root."""
    header_srclang: str | None = None
    body: ET.Element | None = None
    try:
        for event, el in ET.iterparse(fh, events=("start", "end")):
            tag = _local(el.tag)
            if event == "start":
                if tag == "header":
                    header_srclang = el.get("srclang")
                elif tag == "body":
                    body = el
                continue
            if tag == "tu":
                yield parse_tu(el, header_srclang, opts)
                (body if body is not None else el).clear()  # drop what is processed: memory stays flat
    except ET.ParseError as exc:
        line, col = exc.position
        raise TmxError(f"{name}:{line}:{col}: malformed TMX: {exc}") from exc


def _check_root(fh: BinaryIO, name: str) -> None:
    try:
        for _, el in ET.iterparse(fh, events=("start",)):
            if _local(el.tag) != "tmx":
                raise TmxError(f"{name}: not a TMX file (root element <{_local(el.tag)}>)")
            return
    except ET.ParseError as exc:
        line, col = exc.position
        raise TmxError(f"{name}:{line}:{col}: malformed TMX: {exc}") from exc
    finally:
        fh.seek(0)


ProgressFn = Callable[[ImportProgress], None]


def import_tmx(store: TmStore, path: Path, opts: TmxOptions, progress: ProgressFn | None = None) -> ImportReport:
    """Import one file in one transaction. Raises TmxError (nothing committed) on malformed XML."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise TmxError(f"cannot read {path}: {exc.strerror or exc}") from exc
    with fh:
        _check_root(fh, str(path))
        total = path.stat().st_size
        skipped: Counter[str] = Counter()
        counts = {"tus": 0, "entries": 0}

        def report() -> None:
            if progress is not None:
                progress(ImportProgress(counts["tus"], counts["entries"], sum(skipped.values()),
                                        min(fh.tell(), total), total))

        def entries() -> Iterator[TmEntry]:
            for tu in read_tmx(fh, opts, name=str(path)):
                counts["tus"] += 1
                counts["entries"] += len(tu.entries)
                skipped.update(tu.skips)
                if opts.transform is None:
                    yield from tu.entries
                else:
                    f = opts.transform
                    yield from (dataclasses.replace(e, source=f(e.source), target=f(e.target)) for e in tu.entries)
                if counts["tus"] % _PROGRESS_EVERY == 0:
                    report()

        added = store.add_many(entries())
        report()
    return ImportReport(str(path), counts["tus"], added, dict(skipped))
