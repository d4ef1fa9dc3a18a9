"""A peft LoRA adapter directory as the user's fine-tuned model: detected, applied to the base model the user names, merged, checked.

A directory that ``PeftModel.save_pretrained`` wrote holds
``adapter_config.json`` and the adapter's weights, not a model: scoring it
needs the base model it was trained on, which only the user can name
(``--base-model``; the base named in the adapter's config may be a hub name
or a path on another machine, so it is recorded, never followed). The adapter
is applied to a copy of the base model with ``PeftModel.from_pretrained`` and
merged (``merge_and_unload``): the merged model computes what the adapted one
does. Every tensor of the adapter's weights file must then be the model's
(peft only warns about keys it could not place), and only LoRA adapters are
accepted. A merged model saved by the user is an ordinary model directory and
needs none of this.

New-token canaries need the new tokens' embedding rows trained: LoRA leaves
embeddings frozen unless the adapter trains them (``trainable_token_indices``
or ``modules_to_save``); frozen, the canaries are scored all the same, with a
weaker signal (the bound stays valid).

>>> is_adapter_directory("/no/such/directory")
False
"""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path

from .._core.conventions import Convention, checked
from .._core.extras import require
from .hf import quiet_loading
from .loading import LoadedModel
from .model_files import check_hf_directory

__all__ = ["ADAPTER_CONFIG", "is_adapter_directory", "load_lora_adapter"]

ADAPTER_CONFIG = "adapter_config.json"


def is_adapter_directory(path) -> bool:
    """Whether ``path`` is a directory holding a peft adapter's ``adapter_config.json``."""
    return path is not None and (Path(path) / ADAPTER_CONFIG).is_file()


def _adapter_config(directory: Path, option: str) -> dict:
    try:
        config = json.loads((directory / ADAPTER_CONFIG).read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise ValueError(f"`{option}`'s {ADAPTER_CONFIG} is not readable JSON: {error}") from None
    if not isinstance(config, dict) or config.get("peft_type") != "LORA":
        found = config.get("peft_type") if isinstance(config, dict) else None
        raise ValueError(f"`{option}` must be a LoRA adapter (peft_type LORA in {ADAPTER_CONFIG}), got peft_type {found!r}")
    return config


def load_lora_adapter(directory, base: LoadedModel, *, option: str = "--model", base_option: str = "--base-model") -> tuple[LoadedModel, Convention]:
    """The LoRA adapter in ``directory`` applied to a copy of ``base`` and merged, with the checked convention; ``base`` is not changed."""
    peft = require("peft", purpose="scoring a LoRA adapter")
    torch = require("torch", purpose="scoring a LoRA adapter")
    directory = Path(directory)
    config = _adapter_config(directory, option)
    check_hf_directory(directory, option)  # no code of the directory's, no pickled weights
    with quiet_loading():  # peft's warnings are dropped when the adapter is refused: the error is the one line
        try:
            adapted = peft.PeftModel.from_pretrained(copy.deepcopy(base.model), directory)
        except (OSError, ValueError, KeyError, RuntimeError) as error:
            raise ValueError(f"`{option}` is a LoRA adapter that does not load onto `{base_option}`: {str(error).splitlines()[0]}") from None
        saved = peft.utils.load_peft_weights(str(directory), device="cpu")
        placed = peft.get_peft_model_state_dict(adapted)
        unplaced = sorted(key for key in saved if key not in placed or not torch.equal(placed[key].cpu(), saved[key].to(placed[key].dtype)))
        if unplaced or not saved:
            raise ValueError(
                f"`{option}`'s adapter weights do not fit `{base_option}`: {len(unplaced)} of {len(saved)} tensors were not loaded "
                f"(e.g. {unplaced[:1]}); give the base model the adapter was trained on"
            )
    merged = adapted.merge_and_unload().eval()
    convention = checked(
        "fine-tuned model",
        f"a LoRA adapter (r={config.get('r')}, target modules {config.get('target_modules')}) applied to {base_option} and merged",
        f"{ADAPTER_CONFIG} in {option}; all {len(saved)} tensors of the adapter's weights loaded onto {base_option} ({base.source}); "
        f"the adapter's config names base {config.get('base_model_name_or_path')!r}",
    )
    return dataclasses.replace(base, model=merged, source=f"LoRA adapter {directory} on {base.source}"), convention
