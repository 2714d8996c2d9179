"""The shared command-line parsers: durations and positive numbers, bad ones refused naming the value."""

from __future__ import annotations

import argparse

import pytest

from peakgate.drills.args import positive_arg, seconds_arg


@pytest.mark.parametrize(("text", "seconds"), [("150", 150.0), ("150s", 150.0), ("2.5m", 150.0)])
def test_durations(text: str, seconds: float) -> None:
    assert seconds_arg(text) == seconds


@pytest.mark.parametrize("text", ["soon", "0", "-3", "2d", "25h"])
def test_bad_durations(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="duration"):
        seconds_arg(text)


def test_positive_numbers() -> None:
    assert positive_arg("0.5") == 0.5
    for bad in ("0", "-1", "many"):
        with pytest.raises(argparse.ArgumentTypeError, match=repr(bad)):
            positive_arg(bad)
