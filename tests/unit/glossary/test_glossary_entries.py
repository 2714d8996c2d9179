"""Glossary entries in DeepL's TSV and CSV formats: trimmed, validated, errors naming the line at fault."""

from __future__ import annotations

import pytest

from peakgate.errors import BadRequest
from peakgate.glossary import Entry, EntryLimits, InvalidEntries, parse_entries, to_tsv


def test_tsv_trims_and_skips_blank_lines() -> None:
    text = "server\tservidor central\n\n  account \t cuenta de usuario  \r\n"
    assert parse_entries(text, "tsv") == (Entry("server", "servidor central"), Entry("account", "cuenta de usuario"))


def test_csv_with_quotes_commas_and_language_columns() -> None:
    text = 'server,servidor central\n"a, b","c ""d"""\naccount,cuenta,en,es\n'
    assert parse_entries(text, "csv", langs=("en", "es")) == (
        Entry("server", "servidor central"), Entry("a, b", 'c "d"'), Entry("account", "cuenta"))


def test_csv_language_columns_must_match_the_glossary() -> None:
    with pytest.raises(InvalidEntries, match="line 2 is for en→de"):
        parse_entries("a,b\nc,d,EN,DE\n", "csv", langs=("en", "es"))


@pytest.mark.parametrize(("text", "fmt", "fragment"), [
    ("server\tservidor\nserver\totro", "tsv", "line 2 duplicates source term 'server' (line 1)"),
    ("a\tb\n\t x", "tsv", "line 2 has an empty source term"),
    ("a\t  ", "tsv", "line 1 has an empty target term"),
    ("a\tb\nno tab here", "tsv", "line 2 must have a source and a target term separated by a tab"),
    ("a\tb\tc", "tsv", "line 1 must have"),
    ("a,b,c", "csv", "line 1 must have 2 or 4 columns"),
    ("a,b\nx,,", "csv", "line 2 must have"),
    ('"a\u0085b",c', "csv", "control character"),
    ("", "tsv", "no entries"),
    ("\n \n", "csv", "no entries"),
])
def test_bad_entries_say_what_and_where(text: str, fmt: str, fragment: str) -> None:
    with pytest.raises(InvalidEntries) as info:
        parse_entries(text, fmt)
    assert fragment in info.value.message
    assert isinstance(info.value, BadRequest)


def test_unknown_format_is_refused() -> None:
    with pytest.raises(InvalidEntries, match="entries_format 'xlsx'"):
        parse_entries("a\tb", "xlsx")


def test_malformed_csv_is_a_bad_request() -> None:
    with pytest.raises(InvalidEntries, match="malformed"):
        parse_entries('a,"b\nc', "csv")


def test_limits_on_entries_bytes_and_term_length() -> None:
    with pytest.raises(InvalidEntries, match="more than 2 entries"):
        parse_entries("a\t1\nb\t2\nc\t3", limits=EntryLimits(max_entries=2))
    with pytest.raises(InvalidEntries, match="over the 10-byte limit"):
        parse_entries("abcdef\tghijkl", limits=EntryLimits(max_bytes=10))
    with pytest.raises(InvalidEntries, match="source term is over 4 bytes"):
        parse_entries("ñandú\tx", limits=EntryLimits(max_term_bytes=4))


def test_duplicates_are_case_sensitive_like_deepl() -> None:
    assert len(parse_entries("Server\tA\nserver\tB")) == 2


def test_to_tsv_round_trips() -> None:
    entries = parse_entries("a b\tc d\ne\tf")
    assert parse_entries(to_tsv(entries)) == entries
    assert to_tsv(entries) == "a b\tc d\ne\tf"


def test_unicode_line_separators_are_refused_not_split_on() -> None:
    with pytest.raises(InvalidEntries, match="line 2: source term 'a\\\\u2028b' holds a control character"):
        parse_entries("x\ty\na\u2028b\tc")
