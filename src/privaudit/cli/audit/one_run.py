"""The options of ``privaudit audit one-run``."""

from __future__ import annotations

from typing import Optional

from ..claims import claim_flags
from .flags import _LABEL_COL, Flag, _import_path, data_flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag("--threat-model", Optional[str], "white-box (gradient canaries, the default) or black-box (mislabeled input canaries).", config="threat_model"),
    Flag(
        "--observe",
        Optional[str],
        "With the white box: updates (every released update, the default) or final (the hidden state: the same gradient canaries in "
        "every step, only the final parameters read; adds the last-iterate heuristic beside the bound, labelled a heuristic).",
        config="observe",
    ),
    Flag(
        "--input-canaries",
        Optional[str],
        "With the black box: mislabeled (the default) or metagradient (the mislabeled canaries' features optimised by metagradient "
        "descent on a non-private surrogate of the built-in architecture before the inclusion draw, Boglioni et al. 2025).",
        config="input_canaries",
    ),
    Flag("--meta-steps", Optional[int], "With --input-canaries metagradient: the meta steps (each trains the surrogate twice).", config="meta_steps"),
    Flag(
        "--black-box-score",
        Optional[str],
        "With the black box: loss (the final model's negated loss, the default) or calibrated (minus the same of a reference run of "
        "the pipeline on the data without any canary; with the built-in DP-SGD it starts from the same weights).",
        config="black_box_score",
    ),
    Flag("--canaries", Optional[int], "m, the number of canaries, each included with probability --inclusion-prob.", config="num_canaries"),
    Flag("--inclusion-prob", Optional[float], "Probability that each canary is included (the guessing bounds need 0.5).", config="inclusion_prob"),
    Flag("--steps", Optional[int], "DP-SGD steps of the one training run.", config="num_steps"),
    Flag(
        "--train",
        Optional[str],
        "With --threat-model black-box: your training function instead of the built-in model and DP-SGD, package.module:fn with "
        "fn(x_train, y_train, *, seed) -> model, the contract of `privaudit audit blackbox --train`; trained once, on the training split of "
        "the dataset (--data, else the config's embedded one) with the included canaries appended. The claim tested is --claimed-epsilon; "
        "the accountant's ε for the config's noise_multiplier, sampling_rate and num_steps is evidence only, and these settings are stated "
        "as what ran only if fn reports its Opacus optimizer and accountant (privaudit.integrations.observed.report_opacus), else "
        "'as given, not observed'. A reported σ below the least σ the claim allows at the q and steps that ran flags the run.",
        config="train",
        parse=_import_path("--train"),
    ),
    data_flag("the canaries are distinct records of either split, relabelled and withheld from the rest."),
    _LABEL_COL,
    *claim_flags("your training (privaudit's own DP-SGD: its accountant, when not given)"),
)
