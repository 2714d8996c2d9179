"""Command-line value parsers the surge, drill and soak commands share (argparse types: a bad value is a usage
error naming it)."""

from __future__ import annotations

import argparse


def seconds_arg(text: str) -> float:
    """'150', '150s' or '2.5m' as seconds."""
    scale = 60.0 if text.endswith("m") else 1.0
    try:
        value = float(text.removesuffix("m").removesuffix("s")) * scale
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 150, 150s or 2.5m)") from exc
    if not 0 < value <= 24 * 3600:
        raise argparse.ArgumentTypeError(f"duration {text!r} must be more than 0 and at most a day")
    return value


def positive_arg(text: str) -> float:
    try:
        value = float(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from exc
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0: {text!r}")
    return value
