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

__all__ = ["WEIGHT_PATTERNS", "check_weights_present", "load_hf_directory"]

#: the files save_pretrained writes the weights to (one file, or shards with an index)
WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "*.safetensors.index.json", "pytorch_model.bin.index.json")


def check_weights_present(directory: str | Path, option: str) -> None:
    """A ValueError naming ``option`` when ``directory`` (with its config.json) holds no weights file."""
    folder = Path(directory)
    if (folder / "config.json").is_file() and not any(any(folder.glob(pattern)) for pattern in WEIGHT_PATTERNS):
        raise ValueError(
            f"`{option}` {str(folder)!r} holds a config.json but no weights (model.safetensors, pytorch_model.bin or their sharded index): "
            "save the trained model with model.save_pretrained(directory)"
        )


def load_hf_directory(directory: str | Path, option: str, **options: Any) -> Any:
    """:func:`~privaudit.models.loading.load_model` of the Hugging Face ``directory``; every refusal is one line naming ``option``."""
    from .loading import load_model

    check_weights_present(directory, option)
    try:
        return load_model(directory, kind="huggingface", option=option, **options)
    except ValueError as error:
        if str(error).startswith(f"`{option}`"):
            raise
        raise ValueError(f"`{option}`: {error}") from error
