"""The options of ``privaudit audit blackbox``."""

from __future__ import annotations

from typing import Optional

from ..claims import claim_flags
from .flags import _LABEL_COL, Flag, _import_path, backend_flags, data_flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag(
        "--train",
        Optional[str],
        "Your training function instead of the built-in model and DP-SGD: package.module:fn with "
        "fn(x_train, y_train, *, seed) -> model (with --init worst-case: fn(x_train, y_train, *, seed, init_state), loading init_state into the model "
        "--init-model builds before training). x_train is float32 (n, d) and y_train is int64 (n,), the config's dataset with the canary in half the runs. "
        "The model is a torch.nn.Module returning logits, an object with predict_proba, or a predict_proba function. "
        "fn must be a module-level function that worker processes can import (from the current directory or the Python path). "
        "privaudit does not know fn's mechanism: no accountant's ε is reported, and the verdict is against --claimed-epsilon.",
        config="train",
        parse=_import_path("--train"),
    ),
    data_flag("the mislabelled canary is the first test record with the next label."),
    _LABEL_COL,
    Flag(
        "--init",
        Optional[str],
        "Where every training run starts: average (each run's own random weights, the default) or worst-case (parameters privaudit crafts once "
        "from --seed by pre-training on records outside the audited set, after Annamalai and De Cristofaro 2024: the built-in model, or with --train "
        "the module --init-model builds, given to your function as init_state). A DP claim holds from every start, so the worst-case bound is for "
        "the pipeline under worst-case initialisation.",
        config="init",
    ),
    Flag(
        "--init-model",
        Optional[str],
        "With --train and --init worst-case: package.module:build, building the untrained torch.nn.Module your function trains (build() or "
        "build(*, seed)); it must map a float32 batch (n, d) to logits (n, classes). privaudit pre-trains it on records outside the audited set "
        "and passes the result to every run as init_state.",
        config="init_model",
        parse=_import_path("--init-model"),
    ),
    Flag(
        "--num-records",
        Optional[int],
        "Audit a training set of the first N records of the train split (default: all of it); the rest can craft the worst-case start.",
        config="num_records",
    ),
    *backend_flags(),
    *claim_flags("your training (without --train: privaudit's accountant for its own DP-SGD)"),
)
