"""The options of ``privaudit audit synthetic-text``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..claims import claim_flags, family_flags
from .flags import _ONE_RUN_DELTA, Flag, _import_path

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag("--synthetic", Optional[Path], "The synthetic text your fine-tuned model generated (UTF-8, one record a line).", run="synthetic"),
    Flag(
        "--provenance",
        Optional[Path],
        "The provenance JSON of prepare_lm_canaries: the canaries whose echoes are looked for, their scored span, the inclusion coins.",
        run="provenance",
    ),
    Flag(
        "--synthetic-signal",
        Optional[str],
        "ngram (the canary under a word n-gram model of the text, the default), jaccard (its best match) or model (with --synthetic-train).",
        config="synthetic_signal",
    ),
    Flag(
        "--synthetic-train",
        Optional[str],
        "With --synthetic-signal model: your function package.module:fn, fn(texts, *, seed) -> (model, tokenizer), that fine-tunes a "
        "Hugging Face causal LM on the synthetic records; the canaries are scored by its log-likelihood (Mitchell et al.).",
        config="synthetic_train",
        parse=_import_path("--synthetic-train"),
    ),
    Flag("--ngram-order", Optional[int], "n of the word n-grams (default 2).", config="ngram_order"),
    *claim_flags("your DP generation pipeline", quantity="end to end, for one record"),
    *family_flags("your DP generation pipeline (its canaries inserted once)"),
    Flag(
        "--canary-copies",
        Optional[int],
        "How many times each included canary was in the fine-tuning data (recorded by `privaudit canaries lm`; needed otherwise): "
        "the bound on k copies is turned into a record's ε by group privacy.",
        config="canary_copies",
    ),
    _ONE_RUN_DELTA,
)
