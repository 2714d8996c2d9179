"""Queue messages: versioned msgpack entries and replies, and errors rebuilt by their code."""

from __future__ import annotations

import msgspec
import pytest

from peakgate.errors import BackendError, BadRequest, InputTooLarge, Overloaded, PeakgateError, Unavailable
from peakgate.scaleout import codec
from peakgate.scaleout.transport import QueueUnreachable

ENTRY = codec.WorkEntry(request_id=3, gateway="g", reply_to="pg:r:g", model="m", source="en", target="es",
                        priority="document", segments=["One. Two.", ""], split_sentences=False, beam_cap=2,
                        deadline_wall_s=1_700_000_000.5)


def test_an_entry_round_trips() -> None:
    assert codec.decode_entry(codec.encode(ENTRY)) == ENTRY


@pytest.mark.parametrize("payload", [None, b"", b"\xc1", msgspec.msgpack.encode({"request_id": 1}),
                                     msgspec.msgpack.encode({**msgspec.structs.asdict(ENTRY), "priority": "vip"})])
def test_anything_but_a_well_formed_entry_is_a_bad_request(payload: bytes | None) -> None:
    with pytest.raises(BadRequest):
        codec.decode_entry(payload)


def test_another_schema_version_is_refused_but_its_sender_can_still_be_told() -> None:
    newer = codec.encode(msgspec.structs.replace(ENTRY, v=2))
    with pytest.raises(BadRequest, match="schema v2"):
        codec.decode_entry(newer)
    assert codec.decode_envelope(newer) == codec.Envelope(3, "pg:r:g")
    assert codec.decode_envelope(b"\xc1") is None


def test_a_success_carries_one_text_per_segment() -> None:
    [reply] = codec.decode_replies(codec.encode([codec.success(3, ["Uno. Dos.", ""])]))
    assert codec.outcome(reply, 2) == ["Uno. Dos.", ""]
    wrong = codec.outcome(reply, 3)
    assert isinstance(wrong, BackendError) and "2 translations for 3" in wrong.message


@pytest.mark.parametrize(("error", "expected"), [
    (Overloaded("full", retry_after_s=2.5), Overloaded),
    (InputTooLarge("too big"), InputTooLarge),
    (QueueUnreachable("gone", retry_after_s=1.0), Unavailable),  # rebuilt as the tree's own class
    (BackendError("boom"), BackendError),
])
def test_a_failure_comes_back_as_the_same_error_with_its_hint(error: PeakgateError, expected: type) -> None:
    [reply] = codec.decode_replies(codec.encode([codec.failure(9, error)]))
    rebuilt = codec.outcome(reply, 1)
    assert type(rebuilt) is expected
    assert isinstance(rebuilt, PeakgateError)
    assert (rebuilt.message, rebuilt.retry_after_s) == (error.message, error.retry_after_s)


def test_an_unknown_error_code_is_a_backend_error() -> None:
    assert codec.error_class("from_the_future") is BackendError


def test_replies_of_another_schema_version_are_refused() -> None:
    with pytest.raises(BadRequest, match="schema"):
        codec.decode_replies(codec.encode([codec.success(1, ["a"]), codec.Reply(v=2, request_id=2)]))
