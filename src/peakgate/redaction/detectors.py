"""PII detectors: a regex finds candidates, a validator (Luhn, mod-97, digit counts) weeds out look-alikes."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Protocol

from peakgate.redaction.settings import PiiKind


@dataclass(frozen=True, slots=True)
class Match:
    kind: PiiKind
    start: int
    end: int


class Detector(Protocol):
    @property
    def kind(self) -> PiiKind: ...

    def find(self, text: str) -> Iterator[Match]: ...


def luhn_ok(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def iban_ok(compact: str) -> bool:
    """ISO 13616 check: move the first four characters to the end, letters to numbers, mod 97 == 1."""
    rearranged = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in rearranged)) % 97 == 1


def _digits(s: str) -> str:
    return "".join(ch for ch in s if ch.isdigit())


def _card_ok(s: str) -> bool:
    digits = _digits(s)
    return 13 <= len(digits) <= 19 and luhn_ok(digits)


def _phone_ok(s: str) -> bool:
    # E.164 allows at most 15 digits; fewer than 8 is a short number, a year or a count, not a phone.
    return 8 <= len(_digits(s)) <= 15


def _iban_ok(s: str) -> bool:
    compact = s.replace(" ", "").upper()
    return 15 <= len(compact) <= 34 and iban_ok(compact)


def _id_ok(s: str) -> bool:
    # Three digits keep words like "COVID-19" or "iPhone15" out; ids like "AB-20931-X" get in.
    return sum(ch.isdigit() for ch in s) >= 3 and any(ch.isalpha() for ch in s)


def _always(_: str) -> bool:
    return True


_URL_TRAILING = ".,;:!?)]}'\""


def _at_least_digits(count: int) -> Callable[[str], bool]:
    """A cue for detectors whose validator needs `count` digits: one linear scan in C, stopping at the last."""
    scan = re.compile(r"(?:\D*\d){" + str(count) + "}")
    return lambda text: scan.match(text) is not None


@dataclass(frozen=True, slots=True)
class RegexDetector:
    kind: PiiKind
    pattern: re.Pattern[str]
    valid: Callable[[str], bool] = _always
    rstrip: str = ""  # characters a match may grab that usually end the sentence instead
    # What any valid match needs in the text: a cheap test that spares the pattern's scan of ordinary text
    # (most sentences with a number or two hold no card, phone or e-mail).
    cue: Callable[[str], bool] = _always

    def find(self, text: str) -> Iterator[Match]:
        if not self.cue(text):
            return
        for m in self.pattern.finditer(text):
            value = m.group().rstrip(self.rstrip) if self.rstrip else m.group()
            if value and self.valid(value):
                yield Match(self.kind, m.start(), m.start() + len(value))


_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}")
_URL = re.compile(r"\b(?:https?://|www\.)[^\s<>\"]+", re.IGNORECASE)
_IBAN = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?\b")
_CARD = re.compile(r"(?<![\d-])\d(?:[ -]?\d){12,18}(?![\d-])")
# International (+CC ...) or national formats that start with a trunk 0 or an area code in
# parentheses / separated groups; a bare run of digits without + or 0 is left alone.
_PHONE = re.compile(
    r"(?<![\w+])(?:"
    r"\+\d{1,3}(?:[ .-]?\(?\d{1,4}\)?){2,5}"
    r"|\(\d{2,4}\)[ .-]?\d{3,4}[ .-]?\d{3,4}"
    r"|0\d{1,4}(?:[ .-]?\d{2,4}){1,4}"
    r"|\d{3}[.-]\d{3}[.-]\d{4}"
    r")(?![\w])"
)
_ID = re.compile(r"(?<![\w-])[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){7,}(?![\w-])")


# Every detector needs a digit, an "@" or a URL scheme/"www.": text with none of them (most UI strings) skips
# all six patterns. Keep this in step with the patterns above.
_CUE = re.compile(r"[\d@]|://|www\.", re.IGNORECASE)
_WEB = re.compile(r"://|www\.", re.IGNORECASE)


def might_contain_pii(text: str) -> bool:
    return _CUE.search(text) is not None


def build_detector(kind: PiiKind) -> Detector:
    """The detector for one configured kind; each cue follows from its pattern and validator."""
    match kind:
        case "email":
            return RegexDetector("email", _EMAIL, cue=lambda text: "@" in text)
        case "url":
            return RegexDetector("url", _URL, rstrip=_URL_TRAILING, cue=lambda text: _WEB.search(text) is not None)
        case "iban":
            return RegexDetector("iban", _IBAN, _iban_ok, cue=_at_least_digits(2))
        case "card":
            return RegexDetector("card", _CARD, _card_ok, cue=_at_least_digits(13))
        case "phone":
            return RegexDetector("phone", _PHONE, _phone_ok, cue=_at_least_digits(8))
        case "id":
            return RegexDetector("id", _ID, _id_ok, cue=_at_least_digits(3))
