"""Fuzzy-match repair ("局部替换"): patch one changed span of a TM target instead of translating it all.

Pure logic around an injected translate callable. Given the query, the matched TM source and its target:
1. word-level diff of query vs TM source; it must be ONE `replace` of at most `max_words` words per side;
2. translate the old span and the new span in one call;
3. if the old span's translation occurs exactly once in the TM target (as whole words), swap in the new one.
Anything else means a full translation is needed; the result says which happened and why.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from typing import Literal

# (texts, source_lang, target_lang) -> one translation per text
TranslateFn = Callable[[Sequence[str], str, str], Awaitable[Sequence[str]]]
RepairKind = Literal["repaired", "full_translation_needed"]

_TOKEN = re.compile(r"\w+|[^\w\s]")


@dataclass(frozen=True, slots=True)
class SpanEdit:
    old: str  # the span as it reads in the TM source
    new: str  # the span as it reads in the query


@dataclass(frozen=True, slots=True)
class RepairResult:
    kind: RepairKind
    score: float  # the fuzzy score of the match that was repaired (or not)
    text: str | None = None  # the repaired target when kind == "repaired"
    reason: str = ""


def single_span_edit(query: str, tm_source: str, *, max_words: int = 3) -> SpanEdit | None:
    """The one replaced span between TM source and query, or None when the difference is anything else."""
    old_tokens = list(_TOKEN.finditer(tm_source))
    new_tokens = list(_TOKEN.finditer(query))
    matcher = SequenceMatcher(None, [m.group() for m in old_tokens], [m.group() for m in new_tokens],
                              autojunk=False)
    edits = [op for op in matcher.get_opcodes() if op[0] != "equal"]
    if len(edits) != 1 or edits[0][0] != "replace":
        return None
    _, i1, i2, j1, j2 = edits[0]
    if i2 - i1 > max_words or j2 - j1 > max_words:
        return None
    old = tm_source[old_tokens[i1].start() : old_tokens[i2 - 1].end()]
    new = query[new_tokens[j1].start() : new_tokens[j2 - 1].end()]
    return SpanEdit(old, new)


def substitute_once(target: str, old: str, new: str) -> str | None:
    """`target` with its single whole-word occurrence of `old` replaced by `new`; None unless exactly one."""
    old = old.strip()
    if not old:
        return None
    for variant in _case_variants(old):
        pattern = re.compile(rf"(?<!\w){re.escape(variant)}(?!\w)")
        found = list(pattern.finditer(target))
        if len(found) > 1:
            return None
        if found:
            at = found[0]
            return target[: at.start()] + _match_case(new.strip(), variant) + target[at.end() :]
    return None


def _case_variants(text: str) -> list[str]:
    # An isolated span often comes back capitalized ("Gato") where the sentence has it mid-way ("gato").
    variants = [text, text[:1].lower() + text[1:], text[:1].upper() + text[1:]]
    return list(dict.fromkeys(variants))


def _match_case(new: str, found: str) -> str:
    if found[:1].isupper() and not new[:1].isupper():
        return new[:1].upper() + new[1:]
    if found[:1].islower() and new[:1].isupper() and not new[:2].isupper():
        return new[:1].lower() + new[1:]
    return new


async def repair(query: str, tm_source: str, tm_target: str, *, score: float, translate: TranslateFn,
                 source_lang: str, target_lang: str, max_words: int = 3) -> RepairResult:
    edit = single_span_edit(query, tm_source, max_words=max_words)
    if edit is None:
        return RepairResult("full_translation_needed", score, reason="not a single short replaced span")
    got = list(await translate([edit.old, edit.new], source_lang, target_lang))
    if len(got) != 2:
        return RepairResult("full_translation_needed", score, reason="span translation returned a bad shape")
    old_tr, new_tr = got
    if not new_tr.strip():
        return RepairResult("full_translation_needed", score, reason="the new span translated to nothing")
    patched = substitute_once(tm_target, old_tr, new_tr)
    if patched is None:
        return RepairResult("full_translation_needed", score,
                            reason="the old span's translation is not exactly once in the TM target")
    return RepairResult("repaired", score, text=patched, reason=f"{edit.old!r} -> {edit.new!r}")
