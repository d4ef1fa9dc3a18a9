"""A Hugging Face model directory given as an option: refused in one line naming that option when it holds no weights or does not load.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> _ = (folder / "config.json").write_text("{}")
>>> check_weights_present(folder, "--model")
Traceback (most recent call last):
...
ValueError: `--model` '...' holds a config.json but no weights (model.safetensors, pytorch_model.bin or their sharded index): ...
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .model_files import WEIGHT_PATTERNS, check_weights_present

__all__ = ["WEIGHT_PATTERNS", "check_weights_present", "load_hf_directory"]


def load_hf_directory(directory: str | Path, option: str, **options: Any) -> Any:
    """:func:`~privaudit.models.loading.load_model` of the Hugging Face ``directory``; every refusal is one line naming ``option``."""
    from .loading import load_model

    try:  # load_model checks the weights are there (check_weights_present) before transformers reads the directory
        return load_model(directory, kind="huggingface", option=option, **options)
    except ValueError as error:
        if str(error).startswith(f"`{option}`"):
            raise
        raise ValueError(f"`{option}`: {error}") from error
