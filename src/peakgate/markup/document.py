"""One marked-up text taken apart (skeleton + sentences) and put back together around translations."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from peakgate.markup.options import MarkupOptions
from peakgate.markup.place import render
from peakgate.markup.segment import segment
from peakgate.markup.sentences import Sentence, sentences_of
from peakgate.markup.tokens import tokenize
from peakgate.markup.xmlcheck import check_xml


@dataclass(frozen=True, slots=True)
class MarkupDocument:
    pieces: tuple[str | Sentence, ...]

    @property
    def sentences(self) -> list[Sentence]:
        return [piece for piece in self.pieces if isinstance(piece, Sentence)]

    def texts(self) -> list[str]:
        """What to translate, in order, each once: every sentence, then every tagged part of one."""
        wanted = [s.source for s in self.sentences] + [text for s in self.sentences for _, _, text in s.spans()]
        return list(dict.fromkeys(wanted))

    def rebuild(self, translations: Mapping[str, str]) -> str:
        """The document with each sentence replaced by its translation; `translations` maps every `texts()`."""
        return "".join(piece if isinstance(piece, str) else render(piece, translations[piece.source], translations)
                       for piece in self.pieces)


def parse_markup(text: str, options: MarkupOptions, *, split: bool = True) -> MarkupDocument:
    """`text` taken apart, its blocks cut into sentences unless not `split`; `MalformedMarkup` (a 400) for XML
    that is not well-formed."""
    xml = options.mode == "xml"
    if xml:
        check_xml(text)
    return MarkupDocument(tuple(sentences_of(segment(tokenize(text, xml=xml), options), split=split)))
