"""The options of ``privaudit audit mia``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..claims import claim_flags, family_flags
from .flags import _LABEL_COL, _LABEL_RULE, Flag, _image_shape, _import_path, _names, _pool_file, backend_flags, delta_flag, factory_flag, path_flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag(
        "--train",
        Optional[str],
        "Your training function instead of the built-in overfitted MLP: package.module:fn with fn(x_train, y_train, *, seed) -> model, "
        "the contract of `privaudit audit blackbox --train`; it trains the target and every reference model on their halves of the pool.",
        config="train",
        parse=_import_path("--train"),
    ),
    Flag(
        "--data",
        Optional[Path],
        "Your pool of records instead of the embedded dataset: .npz with arrays x and y, or .csv/.parquet with the label in --label-col "
        + _LABEL_RULE
        + " A record's id is its row, or its value in --id-col. With --target-kind huggingface: a .txt of texts, one record a line.",
        config="data",
        parse=_pool_file,
    ),
    _LABEL_COL,
    Flag(
        "--train-input",
        Optional[str],
        "What your --train function gets as x_train: array (default: a float32 NumPy array, as before this option) or dataframe "
        "(a pandas DataFrame with the file's column names, for a .csv or .parquet --data with a header row: a ColumnTransformer can select by name).",
        config="train_input",
    ),
    Flag("--references", Optional[int], "Number of reference models (even, >= 4; each record is IN exactly half of them).", config="num_references"),
    Flag(
        "--mode",
        Optional[str],
        "attack (default): attack statistics, no bound; canary: an ε lower bound from mislabeled canaries each included in one training run "
        "by a fair coin; leave-one-out: an ε lower bound from trial models that include each record by a fair coin.",
        config="mode",
    ),
    Flag("--canaries", Optional[int], "Canaries of --mode canary (>= 20, at most half the records outside the population samples).", config="num_canaries"),
    Flag(
        "--trial-models",
        Optional[int],
        "Trial models of --mode leave-one-out (>= 1), besides the --references calibration models.",
        config="num_trial_models",
    ),
    delta_flag("δ of the ε lower bound, in (0, 1) (default 1e-5)."),
    *claim_flags("your training (with --mode canary or leave-one-out)"),
    *family_flags("your training (with --mode canary)"),
    path_flag("--model", "Your trained target model (of --target-kind), attacked instead of one the audit trains (with --members).", "model"),
    Flag(
        "--target-kind",
        Optional[str],
        "What --model is: skops (default), torch (with --factory), torch-export, onnx, or huggingface (a causal LM's save_pretrained directory, with a .txt --data and --reference-models).",
        config="model_kind",
    ),
    factory_flag("--target-kind", config="factory"),
    Flag(
        "--model-output",
        Optional[str],
        "What your model returns: auto (checked on its outputs, the default), logits, probabilities or log-probabilities.",
        config="model_output",
    ),
    Flag(
        "--trusted",
        Optional[list[str]],
        "A type your skops files hold beyond scikit-learn's and numpy's, to load them (repeat for several): only for files you trust.",
        config="trusted",
        parse=tuple,
    ),
    path_flag(
        "--members",
        "The records of --data your model was trained on, one per line (.txt/.csv/.npy): row indices (from 0), or ids of --id-col when given.",
        "members",
    ),
    Flag(
        "--members-col",
        Optional[str],
        "Instead of --members: a column of --data holding 1 for each record your model was trained on, 0 otherwise (not a feature).",
        config="members_col",
    ),
    Flag(
        "--id-col",
        Optional[str],
        "A column of --data holding each record's unique id (any text, kept verbatim: 'P-00017' or a number; not a feature): the report and --members name records by it. "
        "Default: a record's id is its row.",
        config="id_col",
    ),
    Flag(
        "--augment",
        Optional[str],
        "Query every record also as augmented images, as LiRA and RMIA do: flip (the mirror), shift (by --shift-pixels in each direction), "
        "or flip,shift (18 views). Needs the images' shape: --image-shape, unless the embedded dataset declares it.",
        config="augment",
        parse=_names,
    ),
    Flag(
        "--image-shape",
        Optional[str],
        "C,H,W of the images that --data's features flatten (row-major, channels first), e.g. 3,32,32; never guessed from the feature count.",
        config="image_shape",
        parse=_image_shape,
    ),
    Flag("--shift-pixels", Optional[int], "Pixels of each shift of --augment shift (default 1); the border is reflected.", config="shift_pixels"),
    path_flag(
        "--reference-models",
        "A directory of reference models you trained (files of --target-kind, in name order): read instead of trained, with --reference-membership.",
        "reference_models",
    ),
    path_flag(
        "--reference-membership",
        "A .npy (references, records) of booleans: True where a reference model was trained on that row of --data.",
        "reference_membership",
    ),
    *backend_flags(),
)
