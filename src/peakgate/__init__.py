"""peakgate: a translation-serving platform built for traffic peaks."""

__version__ = "0.1.0"
