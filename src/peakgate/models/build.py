"""`peakgate models build`: gettext corpus → Apertium teacher → SentencePiece → student → CTranslate2.

Every step writes into the build folder and is skipped when its output already exists, so a
rerun resumes; the converted models and their manifest go to the models folder.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from peakgate.backends.apertium import ApertiumBackend
from peakgate.backends.base import DecodeOptions
from peakgate.models import corpus
from peakgate.models.convert import convert
from peakgate.models.train import Recipe

DISTILL_CHUNK = 256


@dataclass(frozen=True)
class BuildPaths:
    locale_dir: Path
    heldout: Path
    dev_tsv: Path
    build_dir: Path
    models_dir: Path
    name: str = "student-en-es"


async def _distill(sentences: list[str]) -> list[str]:
    teacher = ApertiumBackend("teacher", "eng-spa", "en", "es", pipelines=1, timeout_s=30.0)
    await teacher.start()
    out: list[str] = []
    try:
        for i in tqdm(range(0, len(sentences), DISTILL_CHUNK), desc="distil (apertium)", unit="chunk"):
            out += await teacher.translate_batch(sentences[i : i + DISTILL_CHUNK], "en", "es", DecodeOptions())
    finally:
        await teacher.close()
    return out


def gather(paths: BuildPaths, log: Callable[[str], None]) -> dict[str, int]:
    """Write train.en / train.es: human pairs where a catalog has them, the teacher elsewhere."""
    src_file, tgt_file = paths.build_dir / "train.en", paths.build_dir / "train.es"
    sizes_file = paths.build_dir / "data_sizes.json"
    if sizes_file.exists():
        sizes: dict[str, int] = json.loads(sizes_file.read_text())
        return sizes
    heldout = corpus.read_heldout(paths.heldout)
    english = corpus.english_sentences(paths.locale_dir, heldout)
    human = {e.source: e.target for e in corpus.human_pairs(paths.locale_dir, "es", heldout)}
    to_distil = [s for s in english if s not in human]
    log(f"{len(english)} English sentences, {len(human)} human pairs, {len(to_distil)} to distil")
    distilled = asyncio.run(_distill(to_distil))
    pairs = sorted([*human.items(), *zip(to_distil, distilled, strict=True)])
    corpus.write_lines(src_file, (s for s, _ in pairs))
    corpus.write_lines(tgt_file, (t for _, t in pairs))
    sizes = {"english_sentences": len(english), "human_pairs": len(human), "distilled_pairs": len(to_distil),
             "training_pairs": len(pairs), "heldout_catalogs_excluded": len(heldout)}
    sizes_file.write_text(json.dumps(sizes, indent=2))
    return sizes


def train_vocab(paths: BuildPaths, recipe: Recipe) -> Path:
    import sentencepiece as spm

    prefix = paths.build_dir / "spm"
    model = prefix.with_suffix(".model")
    if not model.exists():
        spm.SentencePieceTrainer.train(
            input=[str(paths.build_dir / "train.en"), str(paths.build_dir / "train.es")],
            model_prefix=str(prefix), vocab_size=recipe.vocab_size, character_coverage=1.0,
            model_type="unigram", eos_id=0, unk_id=1, bos_id=-1, pad_id=-1,
            input_sentence_size=400000, shuffle_input_sentence=True, num_threads=recipe.threads,
        )
    return model


def _encode(spm_model: Path, recipe: Recipe, paths: BuildPaths) -> list[tuple[list[int], list[int]]]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    src = (paths.build_dir / "train.en").read_text(encoding="utf-8").splitlines()
    tgt = (paths.build_dir / "train.es").read_text(encoding="utf-8").splitlines()
    out = []
    for s_raw, t_raw in zip(sp.encode(src), sp.encode(tgt), strict=True):
        s_ids, t_ids = [*s_raw, 0], [*t_raw, 0]  # 0 is </s>
        if len(s_ids) <= recipe.max_tokens and len(t_ids) <= recipe.max_tokens:
            out.append((s_ids, t_ids))
    return out


def export_tokenizer(spm_model: Path, hf_dir: Path) -> None:
    """Marian tokenizer files beside the HF model, which the CTranslate2 converter reads."""
    import sentencepiece as spm
    from transformers import MarianTokenizer

    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    vocab = {sp.id_to_piece(i): i for i in range(sp.get_piece_size())}
    vocab["<pad>"] = len(vocab)
    (hf_dir / "vocab.json").write_text(json.dumps(vocab, ensure_ascii=False))
    for name in ("source.spm", "target.spm"):
        shutil.copy(spm_model, hf_dir / name)
    tok = MarianTokenizer(vocab=str(hf_dir / "vocab.json"), source_spm=str(hf_dir / "source.spm"),
                          target_spm=str(hf_dir / "target.spm"), source_lang="en", target_lang="es")
    tok.save_pretrained(hf_dir)


def build(paths: BuildPaths, recipe: Recipe, log: Callable[[str], None] = print) -> dict[str, Any]:
    from peakgate.models import train

    paths.build_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    sizes = gather(paths, log)
    spm_model = train_vocab(paths, recipe)
    pairs = _encode(spm_model, recipe, paths)
    hf_dir = paths.build_dir / "hf"
    hf_dir.mkdir(exist_ok=True)
    log(f"training on {len(pairs)} pairs for {recipe.train_minutes} min")
    pad = _vocab_size(spm_model)  # <pad> comes after the SentencePiece pieces
    stats = train.train(pairs, pad + 1, pad, recipe, hf_dir, log=log)
    export_tokenizer(spm_model, hf_dir)
    converted = convert(hf_dir, paths.models_dir, paths.name)
    manifest = {"name": paths.name, "pair": "en-es", "engine": "ctranslate2", "data_sizes": sizes,
                "training": stats, "build_seconds": round(time.monotonic() - started, 1),
                "recipe": asdict(recipe), "teacher": "apertium eng-spa (apertium -u)",
                "variants": {k: str(v.relative_to(paths.models_dir)) for k, v in converted.items()}}
    (paths.models_dir / f"{paths.name}.manifest.json").write_text(json.dumps(manifest, indent=2))
    return manifest


def _vocab_size(spm_model: Path) -> int:
    import sentencepiece as spm

    return int(spm.SentencePieceProcessor(model_file=str(spm_model)).get_piece_size())
