"""Open dev mode made explicit (`api.devmode`): a header on every response, and DeepL-shaped keys refused on request."""

from __future__ import annotations

import deepl
import pytest
from api_fakes import GOOD_KEY, FakeService, client

from bench._http import serve_in_thread
from peakgate.admission.keys import ANONYMOUS, looks_like_deepl_key
from peakgate.api.app import create_app
from peakgate.config import AuthConfig, Settings
from peakgate.domain import Principal

DEEPL_KEY = "279a2e9d-83b3-c416-7e2d-f721593e42a0:fx"


class OpenService(FakeService):
    def authenticate(self, key: str | None) -> Principal:
        return ANONYMOUS  # as `KeyRing` in open mode: any key, or none


def _open(refuse: bool) -> FakeService:
    return OpenService(open_mode=True, settings=Settings(auth=AuthConfig(refuse_deepl_like_keys_in_open_mode=refuse)))


@pytest.mark.parametrize(("key", "shaped"), [
    (DEEPL_KEY, True), (DEEPL_KEY.removesuffix(":fx").upper(), True), ("dev-key", False),
    (DEEPL_KEY + "x", False), (None, False), ("", False),
])
def test_deepl_key_shape(key: str | None, shaped: bool) -> None:
    assert looks_like_deepl_key(key) is shaped


def test_open_mode_marks_every_response_and_keyed_mode_does_not() -> None:
    http = client(_open(refuse=False))
    for reply in (http.get("/v2/usage"), http.get("/healthz"), http.get("/no/such/path")):
        assert reply.headers["x-peakgate-auth"] == "open-dev-mode"
    keyed = client(FakeService()).get("/v2/usage", headers={"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"})
    assert keyed.status_code == 200
    assert "x-peakgate-auth" not in keyed.headers


def test_deepl_shaped_keys_pass_unless_the_flag_says_refuse() -> None:
    headers = {"Authorization": f"DeepL-Auth-Key {DEEPL_KEY}"}
    assert client(_open(refuse=False)).get("/v2/usage", headers=headers).status_code == 200
    refused = client(_open(refuse=True)).get("/v2/usage", headers=headers)
    assert refused.status_code == 403  # DeepL's status for a bad key: the SDK's AuthorizationException
    assert "open dev mode" in refused.json()["message"]
    assert refused.headers["x-peakgate-auth"] == "open-dev-mode"


def test_refusal_speaks_each_dialect_and_spares_other_keys() -> None:
    http = client(_open(refuse=True))
    native = http.post("/v1/translate", json={"segments": ["a"], "target": "es"},
                       headers={"Authorization": f"Bearer {DEEPL_KEY}"})
    assert (native.status_code, native.json()["error"]["code"]) == (401, "unauthorized")
    assert http.get(f"/v2/usage?auth_key={DEEPL_KEY}").status_code == 403
    assert http.get("/v2/usage", headers={"X-API-Key": DEEPL_KEY}).status_code == 403
    assert http.get("/v2/usage", headers={"Authorization": "DeepL-Auth-Key dev-key"}).status_code == 200


def test_the_deepl_sdk_sees_an_authorization_error_for_a_deepl_key_when_told_to() -> None:
    with serve_in_thread(create_app(_open(refuse=True))) as url:
        with pytest.raises(deepl.AuthorizationException, match="open dev mode"):
            deepl.Translator(DEEPL_KEY, server_url=url, send_platform_info=False).get_usage()
        assert deepl.Translator("dev-key", server_url=url, send_platform_info=False).get_usage().character.count == 0
