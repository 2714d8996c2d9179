"""/v2/document's upload fields checked as DeepL checks them, before anything is queued.

Languages and `formality` as /v2/translate (`api.deepl_checks`); a file whose format cannot be told is
"Invalid file data."; a source equal to the target is "Source and target language are equal."; a
`glossary_id` (or a `glossary_ids` of one) needs `source_lang` and must be the caller's glossary with a
dictionary for the pair, so a document never fails late for its glossary.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from peakgate.api.deepl_checks import (
    Served,
    check_formality,
    check_languages_differ,
    check_source,
    check_target,
)
from peakgate.errors import BadRequest
from peakgate.glossary.resolve import GlossaryMismatch
from peakgate.glossary.store import GlossaryStore
from peakgate.jobs.formats import DocumentCodec, UnsupportedDocument, codec_for


@dataclass(frozen=True, slots=True)
class DocumentParams:
    source: str | None  # base code; None: detect
    target: str  # base code: documents translate into the base language
    glossary_id: str | None


def _glossary_id(fields: Mapping[str, str]) -> str | None:
    single = fields.get("glossary_id", "").strip()
    several = [g.strip() for g in fields.get("glossary_ids", "").split(",") if g.strip()]
    if (single and several) or len(several) > 1:
        raise BadRequest("send one glossary: several glossaries per document are not supported here")
    return single or (several[0] if several else None)


def check_glossary(glossaries: GlossaryStore, tenant: str, glossary_id: str, source: str | None,
                   target: str) -> None:
    if source is None:
        raise GlossaryMismatch("Use of a glossary requires the source_lang parameter to be specified")
    glossary = glossaries.get(tenant, glossary_id)  # another tenant's, or none: 404
    if glossary.dictionary(source, target) is None:
        raise GlossaryMismatch(f"glossary {glossary_id!r} has no {source}→{target} dictionary")


def check_document_fields(fields: Mapping[str, str], served: Served, tenant: str,
                          glossaries: GlossaryStore) -> DocumentParams:
    target_lang = fields.get("target_lang", "").strip()
    if not target_lang:
        raise BadRequest("missing required field `target_lang`")
    target = check_target(target_lang, served).partition("-")[0]
    source = check_source(fields.get("source_lang"), served)
    check_formality(fields.get("formality"))
    check_languages_differ(source, target)
    glossary_id = _glossary_id(fields)
    if glossary_id is not None:
        check_glossary(glossaries, tenant, glossary_id, source, target)
    return DocumentParams(source, target, glossary_id)


def document_codec(filename: str | None, content_type: str | None) -> DocumentCodec:
    try:
        return codec_for(filename, content_type)
    except UnsupportedDocument as exc:
        raise BadRequest("Invalid file data.") from exc
