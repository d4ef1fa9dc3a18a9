"""The options of ``privaudit audit dpsgd``."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from ..claims import claim_flags
from .flags import Flag, _dataset_file, _import_path, path_flag

__all__ = ["FLAGS"]

FLAGS: tuple[Flag, ...] = (
    Flag(
        "--model",
        Optional[str],
        "Your PyTorch module instead of the built-in architecture: package.module:factory, a function called with no arguments "
        "(weights seeded by --seed) that returns a torch.nn.Module mapping (n, features) to class logits (n, classes), "
        "with no BatchNorm. It is trained by the reference DP-SGD with the config's DP settings. "
        "The module is imported from the current directory or the Python path.",
        config="architecture",
        parse=_import_path("--model"),
    ),
    path_flag(
        "--weights",
        "Initial weights of --model: safetensors, or a state_dict saved with torch.save (read with weights_only=True). "
        "Pickle files are refused, and the names and shapes must match the module exactly.",
        "weights",
    ),
    Flag(
        "--data",
        Optional[Path],
        "Your dataset instead of the embedded one: .npz with arrays x (n, features) and y (n integer labels), "
        "or .csv/.parquet of numbers, one example per row, label in --label-col (without it: the one column of whole numbers "
        "or named label/labels/y/target/class, else refused). "
        "It is split 75/25 into train and test by --seed; features are used as they are (no scaling). "
        ".parquet needs pandas and pyarrow.",
        config="dataset",
        parse=_dataset_file,
    ),
    Flag(
        "--label-col",
        Optional[str],
        "The label column of a .csv (needs a header row) or .parquet --data; overrides the config's label_col.",
        config="label_col",
    ),
    *claim_flags(
        "your DP-SGD training (default: privaudit's accountant for the settings it runs)",
        quantity="end to end; converted to one step with the config's q and T",
    ),
)
