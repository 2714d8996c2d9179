"""HTTP API: native, DeepL- and LibreTranslate-compatible routes over one service."""
