"""The real server process on the real engines, called by the real third-party clients, unmodified.

`peakgate serve` runs as a subprocess (as a user starts it); the official `deepl` SDK, `libretranslatepy`
and `deep-translator` talk to it over 127.0.0.1 exactly as they talk to the public services.
"""

from __future__ import annotations

from collections.abc import Iterator

import deepl
import httpx
import pytest
from deep_translator import LibreTranslator
from libretranslatepy import LibreTranslateAPI

from bench._http import Server, serve

KEY = "it-interactive-key"
QUOTA_KEY = "it-small-quota-key"
CONFIG: dict[str, object] = {
    "keys": [
        {"key": KEY, "tenant": "acme", "priority_class": "interactive"},
        {"key": QUOTA_KEY, "tenant": "tiny", "priority_class": "batch", "quota_chars": 40},
    ],
}


@pytest.fixture(scope="module")
def server() -> Iterator[Server]:
    with serve(CONFIG) as running:
        yield running


def test_deepl_sdk_translates_reads_usage_and_languages(server: Server) -> None:
    translator = deepl.Translator(KEY, server_url=server.url)
    results = translator.translate_text(["Save the document", "Open the file"], source_lang="EN", target_lang="ES")
    assert [r.detected_source_lang for r in results] == ["EN", "EN"]
    assert all(r.text and r.text != src for r, src in zip(results, ["Save the document", "Open the file"],
                                                            strict=True))
    assert "documento" in results[0].text.lower()
    auto = translator.translate_text("Delete the selected files", target_lang="ES")
    assert auto.detected_source_lang == "EN"
    assert translator.get_usage().character.count > 0
    targets = {lang.code.upper() for lang in translator.get_target_languages()}
    assert {"ES", "EN-GB", "EN-US"} <= targets  # DeepL lists English targets by variant
    assert "EN" in {lang.code.upper() for lang in translator.get_source_languages()}


def test_deepl_sdk_bad_key_and_spent_quota(server: Server) -> None:
    with pytest.raises(deepl.AuthorizationException):
        deepl.Translator("not-a-key", server_url=server.url).translate_text("hello", target_lang="ES")
    small = deepl.Translator(QUOTA_KEY, server_url=server.url, send_platform_info=False)
    small.translate_text("Save the document now please", target_lang="ES")  # 28 of 40 characters
    with pytest.raises(deepl.QuotaExceededException):
        small.translate_text("Save the document now please", target_lang="ES")


def test_deepl_rejects_more_than_50_texts_with_a_json_reason(server: Server) -> None:
    reply = httpx.post(f"{server.url}/v2/translate", headers={"Authorization": f"DeepL-Auth-Key {KEY}"},
                       json={"text": ["a"] * 51, "target_lang": "ES"})
    assert reply.status_code == 400
    assert "51" in reply.json()["message"]


def test_libretranslatepy_translates_detects_and_lists(server: Server) -> None:
    lt = LibreTranslateAPI(server.url, api_key=KEY)
    assert "documento" in lt.translate("Save the document", "en", "es").lower()
    assert lt.translate("Guardar el documento", "es", "en").lower().startswith("save")
    assert lt.detect("Guardar el documento en la carpeta")[0]["language"] == "es"
    codes = {lang["code"] for lang in lt.languages()}
    assert {"en", "es"} <= codes


def test_deep_translator_libre(server: Server) -> None:
    translator = LibreTranslator(source="en", target="es", api_key=KEY, custom_url=server.url + "/")
    assert {"archivo", "fichero"} & set(translator.translate("Open the file").lower().split())
    assert len(translator.translate_batch(["Open the file", "Close the window"])) == 2


def test_curl_style_json_and_bad_input(server: Server) -> None:
    # `curl -d '{...}'` sends JSON labelled as a form.
    reply = httpx.post(f"{server.url}/v1/translate", headers={"Authorization": f"Bearer {KEY}",
                                                              "Content-Type": "application/x-www-form-urlencoded"},
                       content=b'{"segments": ["Print the page"], "source": "en", "target": "es"}')
    assert reply.status_code == 200
    assert reply.json()["translations"][0]["text"]
    bad = httpx.post(f"{server.url}/v1/translate", headers={"Authorization": f"Bearer {KEY}"},
                     json={"segments": ["x"], "source": "en", "target": "xx"})
    assert bad.status_code == 400
    assert "xx" in bad.json()["error"]["message"]
    assert httpx.get(f"{server.url}/metrics").text.count("peakgate_requests_total{") > 0
