"""Sentence splitting: where it cuts, where it must not, and exact reassembly."""

from __future__ import annotations

import pytest

from peakgate.scheduling.split import Split, keep_whole, split_sentences

ROUND_TRIP = [
    "",
    "   ",
    "\n\n",
    "One sentence",
    "  Leading and trailing.  \n",
    "Hello world. How are you? Fine!  Thanks.",
    "First line\nSecond line\r\n\r\nThird after a blank line\n",
    "Pi is 3.14 and e is 2.718. Next one.",
    "Mr. Smith met Dr. Jones at 5 p.m. on Jan. 3. They talked.",
    "He said \"Stop.\" Then he left. (Really!) Yes.",
    "Wait... what? Yes... Go.",
    "你好。我很好！谢谢？好",
    "Tabs\tstay.\tInside\u00a0too.",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_joining_the_sentences_back_gives_the_input(text: str) -> None:
    split = split_sentences(text)
    assert split.join(split.sentences) == text
    assert len(split.separators) == len(split.sentences) + 1
    assert all(s and s == s.strip() for s in split.sentences)


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("Hello world. How are you? Fine! Thanks.", ("Hello world.", "How are you?", "Fine!", "Thanks.")),
        ("Line one\nline two", ("Line one", "line two")),  # a line break always cuts, even before lower case
        ("Pi is 3.14. Next.", ("Pi is 3.14.", "Next.")),
        ("Version 2.0.1 is out", ("Version 2.0.1 is out",)),
        ("I am 5. You are 6.", ("I am 5.", "You are 6.")),
        ("He said \"Stop.\" Then left.", ("He said \"Stop.\"", "Then left.")),
        ("你好。我很好！谢谢", ("你好。", "我很好！", "谢谢")),
        ("Really?! Yes.", ("Really?!", "Yes.")),
    ],
)
def test_cuts_at_sentence_ends(text: str, sentences: tuple[str, ...]) -> None:
    assert split_sentences(text).sentences == sentences


@pytest.mark.parametrize(
    "text",
    [
        "Mr. Smith and Dr. Jones agreed",
        "Fruit, e.g. Apples, and i.e. Pears",
        "The U.S. Government said",
        "J. R. R. Tolkien wrote it",
        "Bring pens, paper, etc. and a chair",
        "Yahoo! is a company",
        "Wait... what",
        "See Fig. 3 and No. 5",
    ],
)
def test_does_not_cut_after_abbreviations_initials_or_before_lower_case(text: str) -> None:
    assert split_sentences(text).sentences == (text,)


def test_separators_keep_the_exact_whitespace() -> None:
    split = split_sentences("  One.  Two.\n\n Three.\t")
    assert split == Split(("One.", "Two.", "Three."), ("  ", "  ", "\n\n ", "\t"))
    assert split.join(["x", "y", "z"]) == "  x  y\n\n z\t"


@pytest.mark.parametrize("text", ["", "  ", "\n\t\n"])
def test_blank_text_has_no_sentences_and_comes_back_unchanged(text: str) -> None:
    for split in (split_sentences(text), keep_whole(text)):
        assert split.sentences == ()
        assert split.join([]) == text


def test_keep_whole_only_sets_aside_outer_whitespace() -> None:
    split = keep_whole("  One. Two.\n")
    assert split == Split(("One. Two.",), ("  ", "\n"))
    assert split.join(["Uno. Dos."]) == "  Uno. Dos.\n"


def test_a_single_capital_before_a_dot_is_an_initial() -> None:
    assert split_sentences("Plan A. Then go.").sentences == ("Plan A. Then go.",)  # the price of keeping "J. Smith"


def test_join_refuses_the_wrong_number_of_translations() -> None:
    with pytest.raises(ValueError, match="expected 2"):
        split_sentences("One. Two.").join(["only one"])
