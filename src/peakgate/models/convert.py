"""HF Marian → CTranslate2, keeping the learned `<pad>` decoder-start embedding.

CTranslate2's stock Marian loader drops the `<pad>` row and starts decoding from a zero embedding,
which is right for Marian-NMT models (their pad row is zero). Our students tie embeddings with the
output projection, so the pad row is trained and non-zero: starting from zero garbles the first
target word ("Open the settings" → "aque el encuadre"). This loader keeps the row and starts from it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

_PAD = "<pad>"
QUANTIZATIONS = (("int8", "int8"), ("float32", "fp32"))


def _converter(hf_dir: Path) -> Any:
    import ctranslate2.converters
    from ctranslate2.converters import transformers as ct2_hf
    from transformers import MarianMTModel, MarianTokenizer

    class KeepPadLoader(ct2_hf.MarianMTLoader):  # type: ignore[misc]
        def get_model_spec(self, model: Any) -> Any:
            model.config.normalize_before = False
            model.config.normalize_embedding = False
            return ct2_hf.BartLoader.get_model_spec(self, model)

        def set_config(self, config: Any, model: Any, tokenizer: Any) -> None:
            super().set_config(config, model, tokenizer)
            config.decoder_start_token = _PAD

        def set_decoder(self, spec: Any, decoder: Any) -> None:
            ct2_hf.BartLoader.set_decoder(self, spec, decoder)

        def get_vocabulary(self, model: Any, tokenizer: Any) -> list[str]:
            return list(ct2_hf.BartLoader.get_vocabulary(self, model, tokenizer))

    class Converter(ctranslate2.converters.TransformersConverter):  # type: ignore[misc]
        def _load(self) -> Any:
            model: Any = MarianMTModel.from_pretrained(str(hf_dir))
            model.eval()
            tokenizer = MarianTokenizer.from_pretrained(str(hf_dir))
            return KeepPadLoader()(model, tokenizer)

    return Converter(str(hf_dir))


def convert(hf_dir: Path, models_dir: Path, name: str) -> dict[str, Path]:
    """Write `{name}-int8` and `{name}-fp32` model folders (with the SentencePiece model) under `models_dir`."""
    out: dict[str, Path] = {}
    for quant, suffix in QUANTIZATIONS:
        target = models_dir / f"{name}-{suffix}"
        _converter(hf_dir).convert(str(target), quantization=quant, force=True)
        shutil.copy(hf_dir / "source.spm", target / "source.spm")
        out[suffix] = target
    return out
