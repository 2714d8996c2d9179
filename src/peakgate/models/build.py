"""`peakgate models build`: corpus → Apertium teacher → SentencePiece → student → CTranslate2.

Every step writes into the build folder and is skipped when its output already exists, and training
resumes from its checkpoint there, so a rerun carries on where the last one stopped; the converted
models and their manifest go to the models folder once the recipe's training budget is spent.
"""

from __future__ import annotations

import asyncio
import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from peakgate.backends.apertium import ApertiumBackend
from peakgate.backends.base import DecodeOptions
from peakgate.models import corpus, descriptions
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
    lists_dir: Path = Path("/var/lib/apt/lists")  # apt's Translation-* indexes, for recipes with descriptions


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


def _sources(
    paths: BuildPaths, recipe: Recipe, log: Callable[[str], None]
) -> tuple[dict[str, str], list[str], dict[str, int]]:
    """Human pairs and the English left for the teacher, from every source the recipe names, banned text removed."""
    heldout = corpus.read_heldout(paths.heldout)
    # The dev set's English never becomes a training source, whichever corpus it turns up in.
    banned = corpus.heldout_sources(paths.locale_dir, heldout) | corpus.read_dev_sources(paths.dev_tsv)
    english = corpus.english_sentences(paths.locale_dir, heldout)
    human = {e.source: e.target for e in corpus.human_pairs(paths.locale_dir, "es", heldout)}
    sizes = {"english_sentences": len(english), "human_pairs": len(human), "heldout_catalogs_excluded": len(heldout)}
    if recipe.descriptions:
        en_texts = [descriptions.read_index(p) for p in descriptions.find_indexes(paths.lists_dir, "en")]
        es_texts = [descriptions.read_index(p) for p in descriptions.find_indexes(paths.lists_dir, "es")]
        if not en_texts:
            raise FileNotFoundError(f"no Translation-en index in {paths.lists_dir}: run "
                                    "`apt-get -o Acquire::Languages=en,es update` first")
        en_descs, es_descs = descriptions.descriptions(en_texts, "en"), descriptions.descriptions(es_texts, "es")
        desc_english = descriptions.english_sentences(en_descs)
        desc_human = descriptions.aligned_pairs(en_descs, es_descs)
        log(f"{len(en_descs)} English and {len(es_descs)} Spanish package descriptions: "
            f"{len(desc_english)} sentences, {len(desc_human)} aligned human pairs")
        sizes |= {"description_texts_en": len(en_descs), "description_texts_es": len(es_descs),
                  "description_sentences": len(desc_english), "description_human_pairs": len(desc_human)}
        english = sorted({*english, *desc_english})
        human = desc_human | human  # a catalog's translation wins over a description's
    sizes["dev_sentences_excluded"] = len(banned & {*english, *human})
    human = {s: t for s, t in human.items() if s not in banned}
    return human, [s for s in english if s not in human and s not in banned], sizes


def gather(paths: BuildPaths, recipe: Recipe, log: Callable[[str], None]) -> dict[str, int]:
    """Write train.en / train.es / train.origin: human pairs where a source has them, the teacher elsewhere."""
    sizes_file = paths.build_dir / "data_sizes.json"
    if sizes_file.exists():
        sizes: dict[str, int] = json.loads(sizes_file.read_text())
        return sizes
    human, to_distil, sizes = _sources(paths, recipe, log)
    log(f"{len(human)} human pairs, {len(to_distil)} English sentences to distil")
    distilled = asyncio.run(_distill(to_distil))
    pairs = sorted([(s, t, "human") for s, t in human.items()] + [(s, t, "teacher") for s, t in
                                                                    zip(to_distil, distilled, strict=True)])
    for suffix, column in (("en", 0), ("es", 1), ("origin", 2)):
        corpus.write_lines(paths.build_dir / f"train.{suffix}", (p[column] for p in pairs))
    sizes |= {"distilled_pairs": len(to_distil), "training_pairs": len(pairs),
              "training_pairs_per_epoch": len(pairs) + (recipe.human_repeats - 1) * len(human)}
    sizes_file.write_text(json.dumps(sizes, indent=2))  # last: its presence marks the step done
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


def in_domain(paths: BuildPaths, recipe: Recipe) -> frozenset[str]:
    """The English of the gettext catalogs the recipe trains on (no descriptions): the fine-tune stage's data."""
    human, english, _sizes = _sources(paths, replace(recipe, descriptions=False), lambda _line: None)
    return frozenset({*human, *english})


def _encode(spm_model: Path, recipe: Recipe, paths: BuildPaths,
            keep: frozenset[str] | None = None) -> list[tuple[list[int], list[int]]]:
    """The training pairs as token ids; with `keep`, only those whose English is in it."""
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(spm_model))
    src, tgt, origin = ((paths.build_dir / f"train.{s}").read_text(encoding="utf-8").splitlines()
                        for s in ("en", "es", "origin"))
    if keep is not None:
        rows = [i for i, s in enumerate(src) if s in keep]
        src, tgt, origin = ([column[i] for i in rows] for column in (src, tgt, origin))
    out = []
    for s_raw, t_raw, source in zip(sp.encode(src), sp.encode(tgt), origin, strict=True):
        s_ids, t_ids = [*s_raw, 0], [*t_raw, 0]  # 0 is </s>
        if len(s_ids) <= recipe.max_tokens and len(t_ids) <= recipe.max_tokens:
            # Human translations are better than the teacher's: the recipe may show them more often.
            out += [(s_ids, t_ids)] * (recipe.human_repeats if source == "human" else 1)
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
    from peakgate.models import checkpoint, train

    paths.build_dir.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    sizes = gather(paths, recipe, log)
    spm_model = train_vocab(paths, recipe)
    pairs = _encode(spm_model, recipe, paths)
    hf_dir = paths.build_dir / "hf"
    hf_dir.mkdir(exist_ok=True)
    steps = f"{recipe.max_steps} steps or " if recipe.max_steps else ""
    log(f"training on {len(pairs)} pairs for {steps}{recipe.train_minutes} min, over every resume together")
    pad = _vocab_size(spm_model)  # <pad> comes after the SentencePiece pieces
    with checkpoint.stop_on_signals() as stop:
        stats = train.train(pairs, pad + 1, pad, recipe, hf_dir, log=log,
                            checkpoint_dir=paths.build_dir / "checkpoint", stop=stop.is_set)
        if recipe.finetune_steps:
            domain = _encode(spm_model, recipe, paths, keep=in_domain(paths, recipe))
            log(f"fine-tuning on {len(domain)} catalog pairs for {recipe.finetune_steps} steps")
            stats["finetune"] = train.train(
                domain, pad + 1, pad, train.finetune_recipe(recipe), hf_dir, log=log,
                checkpoint_dir=paths.build_dir / "checkpoint-finetune", stop=stop.is_set,
                init_from=paths.build_dir / "checkpoint")
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
