"""Markup-preserving translation: HTML and XML whose text is translated and whose tags come back intact."""

from peakgate.markup.document import MarkupDocument, parse_markup
from peakgate.markup.options import MarkupOptions, format_options, markup_options, options_from
from peakgate.markup.translate import translate_markup

__all__ = ["MarkupDocument", "MarkupOptions", "format_options", "markup_options", "options_from", "parse_markup",
           "translate_markup"]
