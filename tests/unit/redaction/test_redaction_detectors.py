"""Each PII detector: real values found, look-alikes (bad checksums, dates, versions, short numbers) left alone."""

from __future__ import annotations

import dataclasses

import pytest

from peakgate.redaction import ALL_KINDS, PiiKind, RedactionConfig, Redactor, build_detector, iban_ok, luhn_ok
from peakgate.redaction.detectors import RegexDetector, might_contain_pii


def found(kind: PiiKind, text: str) -> list[str]:
    detector = build_detector(kind)
    values = [text[m.start : m.end] for m in detector.find(text)]
    # The redactor skips the detectors for text without a cue: every real find must carry one.
    assert not values or all(might_contain_pii(v) for v in values), values
    # Each detector's own cue only spares work: without it the pattern finds exactly the same.
    assert isinstance(detector, RegexDetector)
    uncued = dataclasses.replace(detector, cue=lambda _: True)
    assert [text[m.start : m.end] for m in uncued.find(text)] == values
    return values


@pytest.mark.parametrize(("text", "value"), [
    ("write to jane.doe@example.com today", "jane.doe@example.com"),
    ("cc: a.b+tag@mail.example.co.uk.", "a.b+tag@mail.example.co.uk"),
    ("<ops_team-1@sub-domain.example.org>", "ops_team-1@sub-domain.example.org"),
])
def test_email_found(text: str, value: str) -> None:
    assert found("email", text) == [value]


@pytest.mark.parametrize("text", ["user@localhost", "@handle on social", "a@b", "name@example.c"])
def test_email_near_misses(text: str) -> None:
    assert found("email", text) == []


@pytest.mark.parametrize(("text", "value"), [
    ("see https://example.com/a?b=1.", "https://example.com/a?b=1"),
    ("(docs at http://docs.example.org/x/y)", "http://docs.example.org/x/y"),
    ("Visit www.example.org, then log in", "www.example.org"),
    ("HTTPS://EXAMPLE.COM/PATH!", "HTTPS://EXAMPLE.COM/PATH"),
])
def test_url_found_without_sentence_punctuation(text: str, value: str) -> None:
    assert found("url", text) == [value]


@pytest.mark.parametrize("text", ["example.com alone", "ftp is old", "the www is wide", "https:// nothing"])
def test_url_near_misses(text: str) -> None:
    assert found("url", text) == []


@pytest.mark.parametrize(("text", "value"), [
    ("IBAN DE89 3704 0044 0532 0130 00 please", "DE89 3704 0044 0532 0130 00"),
    ("pay GB82WEST12345698765432.", "GB82WEST12345698765432"),
    ("ES91 2100 0418 4502 0005 1332", "ES91 2100 0418 4502 0005 1332"),
])
def test_iban_found(text: str, value: str) -> None:
    assert found("iban", text) == [value]


@pytest.mark.parametrize("text", [
    "DE88 3704 0044 0532 0130 00",  # check digits off by one
    "GB82WEST12345698765433",  # last digit changed
    "AB12 CD",  # too short
])
def test_iban_near_misses(text: str) -> None:
    assert found("iban", text) == []


def test_iban_checksum() -> None:
    assert iban_ok("DE89370400440532013000")
    assert not iban_ok("DE89370400440532013001")


@pytest.mark.parametrize(("text", "value"), [
    ("card 4111 1111 1111 1111 expires", "4111 1111 1111 1111"),
    ("Amex 3782-822463-10005.", "3782-822463-10005"),
    ("paid with 5500005555555559", "5500005555555559"),
])
def test_card_found(text: str, value: str) -> None:
    assert found("card", text) == [value]


@pytest.mark.parametrize("text", [
    "card 4111 1111 1111 1112",  # invalid Luhn
    "order 123456789012",  # 12 digits: too short for a card
    "12345678901234567890",  # 20 digits: too long
    "ref 4111-1111-1111-1111-9",  # glued to more digits
])
def test_card_near_misses(text: str) -> None:
    assert found("card", text) == []


def test_luhn() -> None:
    assert luhn_ok("79927398713")
    assert not luhn_ok("79927398710")


@pytest.mark.parametrize(("text", "value"), [
    ("call +34 612 345 678 now", "+34 612 345 678"),
    ("UK office: 020 7946 0958.", "020 7946 0958"),
    ("US (555) 123-4567 today", "(555) 123-4567"),
    ("or 555-123-4567", "555-123-4567"),
    ("+1 (415) 555-2671", "+1 (415) 555-2671"),
])
def test_phone_found(text: str, value: str) -> None:
    assert found("phone", text) == [value]


@pytest.mark.parametrize("text", [
    "on 2024-01-15 we met", "on 15.01.2024 we met", "version 1.2.3", "build 10.0.19041.1",
    "in 2023 we sold 12345678 units", "room 0123", "+49 12",
])
def test_phone_near_misses_dates_versions_counts(text: str) -> None:
    assert found("phone", text) == []


@pytest.mark.parametrize(("text", "value"), [
    ("ticket AB-20931-X is open", "AB-20931-X"),
    ("customer CUST00012345 wrote", "CUST00012345"),
])
def test_id_found(text: str, value: str) -> None:
    assert found("id", text) == [value]


@pytest.mark.parametrize("text", ["COVID-19 cases", "iPhone15 sales", "well-known-words", "internationalization"])
def test_id_near_misses(text: str) -> None:
    assert found("id", text) == []


def test_overlaps_leftmost_longest_then_kind_order() -> None:
    redactor = Redactor.from_config(RedactionConfig(enabled=True))
    # The e-mail's local part alone would pass as an id; the e-mail starts at the same place and is longer.
    out = redactor.redact("from abc12345xyz@example.com and https://x.example.com/u/jane@example.com ok")
    assert [s.kind for s in out.spans] == ["email", "url"]
    assert out.mapping["[P2]"] == "https://x.example.com/u/jane@example.com"


def test_overlap_tie_goes_to_the_kind_listed_first() -> None:
    # A bare 16-digit Luhn-valid number is a card and (no letters) not an id; with letters it is an id only.
    redactor = Redactor.from_config(RedactionConfig(enabled=True, kinds=("id", "card")))
    assert [s.kind for s in redactor.redact("pay 4111111111111111 now").spans] == ["card"]
    assert ALL_KINDS.index("card") < ALL_KINDS.index("id")


def test_same_value_twice_shares_a_placeholder_and_spans_point_at_the_original() -> None:
    text = "mail a@example.com, again a@example.com, or b@example.com"
    out = Redactor.from_config(RedactionConfig(enabled=True)).redact(text)
    assert out.text == "mail [P1], again [P1], or [P2]"
    assert [text[s.start : s.end] for s in out.spans] == ["a@example.com", "a@example.com", "b@example.com"]


def test_disabled_or_limited_kinds() -> None:
    text = "mail a@example.com or call +34 612 345 678"
    assert Redactor.from_config(RedactionConfig()).redact(text).text == text
    assert not Redactor.from_config(RedactionConfig()).enabled
    only_email = Redactor.from_config(RedactionConfig(enabled=True, kinds=("email",)))
    assert only_email.redact(text).text == "mail [P1] or call +34 612 345 678"
