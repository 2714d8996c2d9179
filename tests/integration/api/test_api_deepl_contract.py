"""DeepL's contract, end to end: `peakgate serve` on the real engines, called by the official `deepl` SDK, unmodified.

The SDK must raise the exception types it raises against DeepL (bad languages, formality, same-language documents),
read `model_type_used`, manage v3 multilingual glossaries, and get a document back translated with a glossary.
(Open dev mode's SDK behaviour is in tests/unit/api/test_api_devmode.py, on an in-process server.)
"""

from __future__ import annotations

import io
from collections.abc import Iterator

import deepl
import pytest
from deepl.api_data import MultilingualGlossaryDictionaryEntries as Dictionary

from bench._http import Server, serve

KEY = "contract-key"
CONFIG: dict[str, object] = {"keys": [{"key": KEY, "tenant": "contract", "priority_class": "interactive"}],
                             "jobs": {"idle_poll_s": 0.05}}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(CONFIG) as running:
        yield running


@pytest.fixture
def client(server: Server) -> deepl.DeepLClient:
    return deepl.DeepLClient(KEY, server_url=server.url, send_platform_info=False)


@pytest.mark.parametrize(("call", "message"), [
    ({"target_lang": "KO"}, "Value for 'target_lang' not supported."),
    ({"target_lang": "ES", "source_lang": "KO"}, "Value for 'source_lang' not supported."),
    ({"target_lang": "ES", "formality": "more"}, "'formality' is not supported for given 'target_lang'."),
    ({"target_lang": "ES", "formality": "casual"}, "Value for 'formality' not supported."),
    ({"target_lang": "ES", "model_type": "fastest"}, "Value for 'model_type' not supported."),
])
def test_bad_parameters_raise_deepls_exception_with_deepls_words(client: deepl.DeepLClient, call: dict[str, str],
                                                                 message: str) -> None:
    with pytest.raises(deepl.DeepLException) as caught:
        client.translate_text("Save the document", **call)  # type: ignore[arg-type]
    assert type(caught.value) is deepl.DeepLException  # not an auth, quota or glossary error
    assert caught.value.http_status_code == 400
    assert str(caught.value) == f"Bad request, message: {message}"


def test_prefer_formality_falls_back_and_model_type_used_is_answered(client: deepl.DeepLClient) -> None:
    plain = client.translate_text("Save the document", source_lang="EN", target_lang="ES")
    assert plain.model_type_used is None
    result = client.translate_text("Save the document", source_lang="EN", target_lang="ES",
                                   formality="prefer_more", model_type="prefer_quality_optimized")
    assert "documento" in result.text.lower()
    assert result.model_type_used in {"quality_optimized", "latency_optimized"}
    fast = client.translate_text("Save the document", source_lang="EN", target_lang="ES",
                                 model_type="latency_optimized")
    assert fast.model_type_used in {"quality_optimized", "latency_optimized"}
    es = next(lang for lang in client.get_target_languages() if lang.code.upper() == "ES")
    assert es.supports_formality is False  # so clients know `more`/`less` will be refused


def test_same_language_document_and_unknown_format_are_refused(client: deepl.DeepLClient) -> None:
    with pytest.raises(deepl.DeepLException, match=r"^Bad request, message: Source and target language are equal\.$"):
        client.translate_document_upload(b"Save the document.", source_lang="EN", target_lang="EN-US",
                                         filename="a.txt")
    with pytest.raises(deepl.DeepLException, match=r"^Bad request, message: Invalid file data\.$"):
        client.translate_document_upload(b"%PDF-1.4", target_lang="ES", filename="scan.pdf")


def test_v3_glossary_crud_listing_and_a_document_translated_with_it(client: deepl.DeepLClient) -> None:
    made = client.create_multilingual_glossary("Contract", [Dictionary("EN", "ES", {"document": "expediente"})])
    assert made.glossary_id in [g.glossary_id for g in client.list_multilingual_glossaries()]
    client.update_multilingual_glossary_dictionary(made, Dictionary("EN", "ES", {"file": "legajo"}))
    assert [d.entry_count for d in client.get_multilingual_glossary(made.glossary_id).dictionaries] == [2]

    handle = client.translate_document_upload(b"Save the document.\n\nOpen the file.\n", source_lang="EN",
                                              target_lang="ES", glossary=made, filename="notes.txt")
    assert len(handle.document_id) == 32 and len(handle.document_key) == 64
    status = client.translate_document_wait_until_done(handle)
    assert status.ok and status.billed_characters == len("Save the document.") + len("Open the file.")
    out = io.BytesIO()
    client.translate_document_download(handle, out)
    text = out.getvalue().decode()
    assert "expediente" in text and "legajo" in text  # the glossary's terms, not the engine's "documento"
    plain = client.translate_text("Save the document.", source_lang="EN", target_lang="ES", glossary=made)
    assert "expediente" in plain.text

    client.delete_multilingual_glossary(made)
    assert made.glossary_id not in [g.glossary_id for g in client.list_multilingual_glossaries()]
    with pytest.raises(deepl.GlossaryNotFoundException):
        client.get_multilingual_glossary(made.glossary_id)

