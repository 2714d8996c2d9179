"""Which of a pair's two languages a translation is in: lingua, through the routing detector's public builder."""

from __future__ import annotations

from peakgate.config import DetectionConfig
from peakgate.quality.fallback import OutputLanguage
from peakgate.routing.langdetect import Detector, build_detector

# Only the pair's two languages, and lingua's fast mode: the question is "source or target?", asked of every
# engine-translated segment (~0.03 ms a call here against ~0.3 ms in high-accuracy mode).
_TWO_WAY = DetectionConfig(accuracy="low", also_recognise=())


def output_language() -> OutputLanguage:
    detectors: dict[tuple[str, str], Detector] = {}

    def best(text: str, pair: tuple[str, str]) -> tuple[str, float] | None:
        detector = detectors.get(pair)
        if detector is None:
            detector = detectors[pair] = build_detector(_TWO_WAY, pair)
        found = detector.detect(text)
        return found[0] if found else None

    return best
