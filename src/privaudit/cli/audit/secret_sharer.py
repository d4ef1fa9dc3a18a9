"""The options of ``privaudit audit secret-sharer``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..claims import claim_flags
from .flags import Flag, _schedule, path_flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag("--template", Optional[str], "Canary format, e.g. 'my pin is {digits:6}'.", config="template"),
    Flag("--schedule", Optional[str], "Insertion counts, comma-separated, e.g. 1,2,4,8,16,32.", config="schedule", parse=_schedule),
    Flag("--epochs", Optional[int], "Maximum training epochs (early stopping on validation loss).", config="epochs"),
    Flag("--dp-epsilon", Optional[float], "Train the audited model with DP-SGD (Opacus) at this epsilon.", config="target_epsilon"),
    Flag("--compare-dp", Optional[float], "Also train a DP-SGD model at this epsilon and compare exposures.", config="compare_dp_epsilon"),
    Flag("--max-corpus-chars", Optional[int], "Use only the first N characters of the corpus.", config="max_corpus_chars"),
    Flag("--hidden", Optional[int], "LSTM hidden units.", config="hidden"),
    Flag("--secure-canaries", bool, "Draw canaries from the OS's secure randomness (not reproducible from --seed).", config="secure_canaries"),
    Flag(
        "--model",
        Optional[Path],
        "Your Hugging Face causal LM (a save_pretrained directory with its tokenizer), trained on the corpus of `privaudit canaries insert`: measured instead of training the built-in LSTM.",
        run="model",
    ),
    Flag("--provenance", Optional[Path], "The provenance.json written by `privaudit canaries insert` (with --model).", run="provenance"),
    Flag("--num-references", Optional[int], "Reference candidates (never inserted) that exposure ranks canaries among.", config="num_references"),
    Flag(
        "--bos",
        Optional[str],
        "With --model: did a BOS token go before each line your model was trained on? auto (default): what the tokenizer adds; "
        "if it declares a BOS that it does not add, corpus lines are scored both ways and the more likely way is taken, "
        "or the run is refused when the margin is too small. prepend or none: as you say, unchecked.",
        config="bos",
    ),
    path_flag(
        "--bos-corpus",
        "With --model and --bos auto: the lines your model was trained on, in the provenance's text format, for the BOS check "
        "(default: the corpus `privaudit canaries insert` wrote beside the provenance).",
        "bos_corpus",
    ),
    *claim_flags("your training, for a record (the exposure bound is a pure ε: it meets only a claim with δ = 0)"),
)
