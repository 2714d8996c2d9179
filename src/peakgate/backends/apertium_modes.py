"""Which Apertium pairs are installed: the mode names under `/usr/share/apertium/modes`, parsed into pairs.

Debian's packages name modes inconsistently: ISO 639-3 codes (`eng-spa`, `spa-cat`), ISO 639-1 codes (`fr-es`,
`en-gl`), and a suffix for a variant of the target (`spa-eng_US`, `es-pt_BR`, `spa-cat_valencia`). Peakgate
speaks ISO 639-1 (what the three API dialects use), so 3-letter codes are mapped to 2-letter ones, and the
regional variants that DeepL has codes for (EN-GB/EN-US, PT-PT/PT-BR) become "en-us", "pt-br", ... targets.
Other variants (orthographic or dialectal ones like `_valencia`, `_iec2017`) and domain modes (`eco-es-fr`)
have no code a client could ask for, so they are left out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from peakgate.backends.apertium import MODES_DIR  # where the engine reads modes from, so discovery looks there

# ISO 639-3 -> ISO 639-1 for the languages Debian ships Apertium pairs for; a 3-letter code without a 2-letter
# one (e.g. "ast") stays as it is.
ISO_639_3: Mapping[str, str] = MappingProxyType({
    "eng": "en", "spa": "es", "cat": "ca", "glg": "gl", "por": "pt", "ita": "it", "fra": "fr", "fre": "fr",
    "oci": "oc", "arg": "an", "eus": "eu", "deu": "de", "nld": "nl", "ron": "ro", "epo": "eo", "srd": "sc",
    "cos": "co", "afr": "af", "dan": "da", "swe": "sv", "nob": "nb", "nno": "nn", "isl": "is", "mlt": "mt",
    "bel": "be", "rus": "ru", "ukr": "uk", "kaz": "kk", "tat": "tt", "cym": "cy", "bre": "br", "gle": "ga",
})
# Mode suffix -> the region of the target it writes, for the variants DeepL has target codes for.
_REGIONS: Mapping[str, tuple[str, str]] = MappingProxyType({  # suffix -> (target language, region)
    "US": ("en", "us"), "GB": ("en", "gb"), "BR": ("pt", "br"), "PT": ("pt", "pt"),
})


@dataclass(frozen=True, slots=True)
class ModePair:
    """An installed mode and the pair it translates, in peakgate's codes ("en", "pt-br")."""

    mode: str
    source: str
    target: str


def _code(name: str) -> str | None:
    if len(name) == 2 and name.isalpha():
        return name.lower()
    if len(name) == 3 and name.isalpha():
        return ISO_639_3.get(name.lower(), name.lower())
    return None


def parse_mode(mode: str) -> ModePair | None:
    """"spa-eng_US" -> ModePair("spa-eng_US", "es", "en-us"); None for a mode no client code can name."""
    base, _, variant = mode.partition("_")
    names = base.split("-")
    if len(names) != 2:
        return None  # "eco-es-fr" and other domain-specific modes
    source, target = _code(names[0]), _code(names[1])
    if source is None or target is None or source == target:
        return None
    if not variant:
        return ModePair(mode, source, target)
    region = _REGIONS.get(variant)
    if region is None or region[0] != target:
        return None
    return ModePair(mode, source, f"{target}-{region[1]}")


def discover_modes(modes_dir: Path = MODES_DIR) -> tuple[ModePair, ...]:
    """Every installed mode with a servable pair, sorted by mode name; () when the folder is absent."""
    if not modes_dir.is_dir():
        return ()
    parsed = (parse_mode(path.stem) for path in sorted(modes_dir.glob("*.mode")))
    return tuple(pair for pair in parsed if pair is not None)
