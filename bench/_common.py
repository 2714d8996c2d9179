"""Shared helpers for the benchmarks: the dev set, model selection, backend lifecycle, tables."""

from __future__ import annotations

import contextlib
import hashlib
import os
import platform
from collections.abc import AsyncIterator, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from peakgate.backends.base import Backend, DecodeOptions
from peakgate.backends.factory import build_backend
from peakgate.config import REPO_MODELS_DIR, ModelConfig, default_models

REPO_ROOT = Path(__file__).resolve().parents[1]
_DEV_CANDIDATES = (
    REPO_ROOT / "shared" / "data" / "dev.en-es.tsv",
    REPO_ROOT.parent / "shared" / "data" / "dev.en-es.tsv",
)
INT8_MODEL = "student-en-es-int8"
FP32_MODEL = "student-en-es-fp32"
BATCH_SIZE = 32
# Beam per served priority class (peakgate.config._default_classes): interactive and batch 1, document 2.
CLASS_BEAMS = {"interactive": 1, "document": 2, "batch": 1}


@dataclass(frozen=True, slots=True)
class DevRow:
    catalog: str
    en: str
    es: str


def default_dev_path() -> Path:
    for candidate in _DEV_CANDIDATES:
        if candidate.is_file():
            return candidate
    return _DEV_CANDIDATES[-1]


def load_dev(path: Path, limit: int | None = None) -> list[DevRow]:
    """The dev TSV (catalog, English, Spanish; no header row). A header row, if one appears, is skipped."""
    rows: list[DevRow] = []
    with path.open(encoding="utf-8") as fh:
        for lineno, raw in enumerate(fh, 1):
            line = raw.rstrip("\n")
            if not line:
                continue
            fields = line.split("\t")
            if len(fields) != 3:
                raise ValueError(f"{path}:{lineno}: expected 3 tab-separated fields, got {len(fields)}")
            if lineno == 1 and fields[1].lower() in {"en", "english", "source"}:
                continue
            rows.append(DevRow(*fields))
            if limit is not None and len(rows) >= limit:
                break
    return rows


def file_sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def heldout_catalogs(dev_path: Path) -> set[str] | None:
    path = dev_path.parent / "heldout-catalogs.txt"
    if not path.is_file():
        return None
    lines = (ln.strip() for ln in path.read_text(encoding="utf-8").splitlines())
    return {ln for ln in lines if ln and not ln.startswith("#")}


def select_models(source: str | None = None, target: str | None = None,
                  names: Iterable[str] | None = None) -> list[ModelConfig]:
    wanted = set(names) if names else None
    return [
        m for m in default_models()
        if (source is None or m.source == source) and (target is None or m.target == target)
        and (wanted is None or m.name in wanted)
    ]


@contextlib.asynccontextmanager
async def started(config: ModelConfig, models_dir: Path = REPO_MODELS_DIR) -> AsyncIterator[Backend]:
    """A started backend built exactly as the server builds it; closed on exit."""
    backend = build_backend(config, models_dir)
    await backend.start()
    try:
        yield backend
    finally:
        await backend.close()


async def translate_all(backend: Backend, segments: Sequence[str], source: str, target: str,
                        *, options: DecodeOptions, batch_size: int = BATCH_SIZE) -> list[str]:
    outputs: list[str] = []
    for i in range(0, len(segments), batch_size):
        batch = segments[i : i + batch_size]
        got = await backend.translate_batch(batch, source, target, options)
        if len(got) != len(batch):
            raise RuntimeError(f"{backend.name} returned {len(got)} outputs for {len(batch)} segments")
        outputs.extend(got)
    return outputs


def render_table(headers: Sequence[str], rows: Sequence[Sequence[object]], digits: int = 2) -> str:
    """A plain aligned text table (numbers right-aligned, floats with `digits` decimals)."""
    cells = [[_fmt(c, digits) for c in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    numeric = [all(_is_number(row[i]) for row in rows) and bool(rows) for i in range(len(headers))]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if num else v.ljust(w)
                         for v, w, num in zip(values, widths, numeric, strict=True)).rstrip()

    sep = "  ".join("-" * w for w in widths)
    return "\n".join([line(list(headers)), sep, *(line(r) for r in cells)])


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fmt(value: object, digits: int = 2) -> str:
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def cpu_info() -> str:
    import ctranslate2

    model = ""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    compute = sorted(ctranslate2.get_supported_compute_types("cpu"))
    return (f"cpu: {model or platform.processor() or '?'}; os.cpu_count()={os.cpu_count()} usable={affinity}; "
            f"python {platform.python_version()}; ctranslate2 {ctranslate2.__version__} "
            f"(cpu compute types {compute})")


def heldout_pairs(catalogs: Iterable[str], count: int, *, exclude: Iterable[str] = (), seed: int = 22,
                  locale_dir: Path = Path("/usr/share/locale/es/LC_MESSAGES")) -> list[DevRow]:
    """`count` English/Spanish pairs from held-out gettext catalogs (a check beside the dev set, never tuned on):
    single-line, no format strings (the dev set has none), not in `exclude`, shuffled with `seed`."""
    import gettext
    import random

    skip = set(exclude)
    rows: list[DevRow] = []
    for name in sorted(catalogs):
        path = locale_dir / name
        if not path.is_file():
            continue
        with path.open("rb") as fh:
            catalog: dict[object, str] = gettext.GNUTranslations(fh)._catalog  # type: ignore[attr-defined]
        for key, target in catalog.items():
            if isinstance(key, str) and _usable(key, target) and key not in skip:
                skip.add(key)
                rows.append(DevRow(name, key, target))
    random.Random(seed).shuffle(rows)
    return rows[:count]


def _usable(source: str, target: str) -> bool:
    return (bool(source.strip()) and bool(target.strip()) and source != target and "%" not in source
            and "\n" not in source + target and "\x04" not in source and len(source) <= 200
            and any(ch.isalpha() for ch in source))
