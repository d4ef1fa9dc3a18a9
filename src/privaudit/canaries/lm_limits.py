"""How many LM canaries, and how long, a base model and this machine can take: checked before any draw.

A canary's secret must fit the model's context with room for its prefix
(at most half the context, read from the directory's ``config.json``), and
the canaries must fit the memory available: the provenance and the corpus
hold every canary, and the new-tokens design adds ``count × length`` rows to
a copy of the model's embeddings.

>>> per_canary_bytes("random-tokens", length=4, hidden=None)
1824
>>> check_lm_sizes("random-tokens", count=10**9, length=4, context=1024, hidden=None, available=8 * 2**30)
Traceback (most recent call last):
...
ValueError: `--count` must be in [4, 2354696] on this machine with --length 4 (about 1824 bytes per canary, 8 GiB available), got 1000000000
"""

from __future__ import annotations

import json
from pathlib import Path

from .._core.resources import available_memory

__all__ = ["MAX_SECRET_TOKENS", "check_lm_sizes", "model_sizes", "per_canary_bytes"]

#: The longest secret whatever the model says: scoring and drawing cost grows with it, and no audit needs more.
MAX_SECRET_TOKENS = 4096
# the config.json keys that give a causal LM's context length, and its hidden size
_CONTEXT_KEYS = ("n_positions", "max_position_embeddings", "n_ctx", "seq_length")
_HIDDEN_KEYS = ("n_embd", "hidden_size", "d_model")


def model_sizes(directory) -> tuple[int | None, int | None]:
    """(context length, hidden size) from a save_pretrained directory's ``config.json``; None where it does not say."""
    try:
        config = json.loads((Path(directory) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # refused, naming the option, when the directory is checked before loading
        return None, None

    def first(keys: tuple[str, ...]) -> int | None:
        values = [config.get(key) for key in keys if isinstance(config, dict)]
        found = [value for value in values if isinstance(value, int) and not isinstance(value, bool) and value > 0]
        return found[0] if found else None

    return first(_CONTEXT_KEYS), first(_HIDDEN_KEYS)


def per_canary_bytes(design: str, *, length: int, hidden: int | None) -> int:
    """A generous estimate of the memory one canary takes: its tokens as Python objects and text, and for new-tokens its embedding rows."""
    size = 1024 + 200 * length
    if design == "new-tokens":
        size += (length + 1) * (hidden or 4096) * 4 * 3  # float32 rows (the secret's and the prefix's) in the resized copy, its output head and the saved copy
    return size


def check_lm_sizes(design: str, *, count: int, length: int, context: int | None, hidden: int | None, available: int | None = None) -> None:
    """Refuse a ``--length`` the model's context cannot hold and a ``--count`` the memory cannot, naming the flag and its range."""
    longest = min(MAX_SECRET_TOKENS, context // 2) if context else MAX_SECRET_TOKENS
    if length > longest:
        reason = (
            f"half the context of --base-model ({context} tokens), leaving room for the prefix"
            if context and context // 2 < MAX_SECRET_TOKENS
            else "privaudit's limit"
        )
        raise ValueError(f"`--length` must be in [1, {longest}] ({reason}), got {length}")
    available = available_memory() if available is None else available
    each = per_canary_bytes(design, length=length, hidden=hidden)
    most = available // (2 * each)  # half the memory: the corpus and the model need the rest
    if count > most:
        raise ValueError(
            f"`--count` must be in [4, {most}] on this machine with --length {length} "
            f"(about {each} bytes per canary, {available / 2**30:.3g} GiB available), got {count}"
        )
