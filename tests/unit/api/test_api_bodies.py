"""Request parsing (api.bodies): query strings and form bodies as UTF-8 text, deep JSON nesting, on every route."""

from __future__ import annotations

import msgspec
import pytest
from api_fakes import GOOD_KEY, FakeService, client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.testclient import TestClient

from peakgate.api.bodies import BodyParser, json_response, urlencoded
from peakgate.api.errors import NATIVE, error_response
from peakgate.errors import BadRequest

DEEP = 10_000  # past any interpreter recursion limit, whatever the stack depth at the parse


class Fields(msgspec.Struct, kw_only=True):
    a: str | list[str] | None = None
    b: str | None = None
    c: str | None = None


def parser_client() -> TestClient:
    parser = BodyParser(Fields, 64 * 1024)

    async def echo(request: Request) -> Response:
        try:
            return json_response(await parser.parse(request))
        except BadRequest as exc:
            return error_response(NATIVE, exc)

    return TestClient(Starlette(routes=[Route("/", echo, methods=["GET", "POST"])]))


def message(reply: object) -> str:
    assert hasattr(reply, "json")
    return str(reply.json()["error"]["message"])


def test_urlencoded_pairs_keep_the_query_string_rules() -> None:
    assert urlencoded(b"a=1&a=x+y%2B&&c&b=x=y") == [("a", "1"), ("a", "x y+"), ("c", ""), ("b", "x=y")]


def test_urlencoded_fields_are_capped_like_starlettes_forms() -> None:
    assert len(urlencoded(b"&".join([b"a=1"] * 1000))) == 1000
    with pytest.raises(BadRequest, match="too many form fields: the limit is 1000"):
        urlencoded(b"&" * 1000)


def test_utf8_text_in_forms_and_queries_arrives_as_sent() -> None:
    http = parser_client()
    raw = http.post("/?c=%C3%B1", content="a=café&b=%E2%82%AC".encode(),
                    headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert raw.json() == {"a": "café", "b": "€", "c": "ñ"}  # raw UTF-8 in a form body, not "cafÃ©"
    multipart = http.post("/", files={"a": (None, "café".encode()), "b": (None, b"x")})
    assert multipart.json() == {"a": "café", "b": "x", "c": None}


@pytest.mark.parametrize(("url", "send", "field"), [
    ("/?a=%FF", {}, "a"),
    ("/?a=ok&b=%C3", {}, "b"),
    ("/", {"content": b"a=caf%E9"}, "a"),
    ("/", {"content": b"b=caf\xe9"}, "b"),
    ("/", {"files": {"c": (None, b"caf\xe9")}}, "c"),
], ids=["query", "query-truncated", "form-escaped", "form-raw", "multipart"])
def test_invalid_utf8_anywhere_is_a_400_naming_the_field(url: str, send: dict[str, object], field: str) -> None:
    headers = {"Content-Type": "application/x-www-form-urlencoded"} if "content" in send else {}
    reply = parser_client().post(url, headers=headers, **send)  # type: ignore[arg-type]
    assert reply.status_code == 400
    assert message(reply).startswith(f"field `{field}` is not valid UTF-8 text")


def test_an_invalid_field_name_is_a_400_too() -> None:
    reply = parser_client().get("/?%FF=1")
    assert reply.status_code == 400 and message(reply).startswith("a field name is not valid UTF-8 text")


def test_multipart_text_in_a_declared_charset_is_decoded_with_it() -> None:
    body = b'--xyz\r\nContent-Disposition: form-data; name="a"\r\n\r\ncaf\xe9\r\n--xyz--\r\n'
    reply = parser_client().post("/", content=body,
                                 headers={"Content-Type": "multipart/form-data; boundary=xyz; charset=latin-1"})
    assert reply.json()["a"] == "café"


def test_a_malformed_multipart_body_is_a_400() -> None:
    reply = parser_client().post("/", content=b"--xyz\r\nno headers", headers={"Content-Type": "multipart/form-data"})
    assert reply.status_code == 400 and "malformed multipart body" in message(reply)


def test_deep_json_nesting_is_a_400() -> None:
    body = b'{"unknown": ' + b"[" * DEEP + b"]" * DEEP + b"}"
    reply = parser_client().post("/", content=body, headers={"Content-Type": "application/json"})
    assert reply.status_code == 400 and message(reply) == "request body is nested too deeply"


@pytest.mark.parametrize(("path", "headers"), [
    ("/v1/translate", {"Authorization": f"Bearer {GOOD_KEY}"}),
    ("/v1/translate/stream", {"Authorization": f"Bearer {GOOD_KEY}"}),
    ("/v1/jobs", {"Authorization": f"Bearer {GOOD_KEY}"}),
    ("/v2/translate", {"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"}),
    ("/v2/glossaries", {"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"}),
    ("/v2/usage", {"Authorization": f"DeepL-Auth-Key {GOOD_KEY}"}),
    ("/translate", {}),
])
def test_every_json_route_answers_deep_nesting_with_a_400_in_its_dialect(path: str, headers: dict[str, str]) -> None:
    body = b'{"unknown": ' + b"{\"x\": " * DEEP + b"1" + b"}" * DEEP + b"}"
    reply = client(FakeService(open_mode=True)).post(path, content=body,
                                                     headers={**headers, "Content-Type": "application/json"})
    assert reply.status_code == 400
    assert "nested too deeply" in reply.text


def test_a_deeply_nested_websocket_message_is_refused_and_the_socket_lives_on() -> None:
    with client(FakeService()).websocket_connect(f"/v1/translate/ws?api_key={GOOD_KEY}") as ws:
        ws.send_text('{"target": "es", "x": ' + "[" * DEEP + "]" * DEEP + "}")
        assert ws.receive_json() == {"type": "error", "message": "message is nested too deeply",
                                     "code": "bad_request"}
        ws.send_text('{"segments": ["hello"], "source": "en", "target": "es"}')
        assert ws.receive_json()["type"] in {"partial", "final"}
