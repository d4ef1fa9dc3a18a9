"""The options of ``privaudit audit lm-one-run``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..claims import claim_flags, family_flags
from .flags import _ONE_RUN_DELTA, Flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag(
        "--model",
        Optional[Path],
        "Your fine-tuned Hugging Face causal LM (a save_pretrained directory with its tokenizer), trained with the included canaries of --provenance.",
        run="model",
    ),
    Flag(
        "--provenance",
        Optional[Path],
        "The provenance JSON of prepare_lm_canaries: the canaries, their scored span, the inclusion coins, the tokenizer.",
        run="provenance",
    ),
    Flag(
        "--base-model",
        Optional[Path],
        "The model before fine-tuning (for new tokens: the resized model that was saved): scores are calibrated by it.",
        run="base_model",
    ),
    Flag(
        "--synthetic",
        Optional[Path],
        "Instead of --model: the synthetic text your fine-tuned model generated (UTF-8, one record a line); each canary's echo in it is scored.",
        run="synthetic",
    ),
    Flag(
        "--synthetic-signal",
        Optional[str],
        "With --synthetic: ngram (the canary under a word n-gram model of the text, the default) or jaccard (its best match).",
        config="synthetic_signal",
    ),
    *claim_flags("your DP fine-tuning", quantity="end to end, for one record"),
    *family_flags("your DP fine-tuning (its canaries inserted once)"),
    _ONE_RUN_DELTA,
    Flag(
        "--canary-copies",
        Optional[int],
        "How many times each included canary is in your fine-tuning data (recorded by `privaudit canaries lm`; needed otherwise): "
        "the bound on k copies is turned into a record's ε by group privacy.",
        config="canary_copies",
    ),
    Flag(
        "--bos",
        Optional[str],
        "auto (what the tokenizer adds, default), prepend or none: the special token before each text your model was trained on.",
        config="bos",
    ),
)
