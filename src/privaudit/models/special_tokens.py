"""The special tokens around a text, as the causal LM saw them in training: decided once and recorded.

A model trained on ``<|endoftext|>`` + line and scored without that BOS puts
each line's first token where it never saw one: every score shifts, and the
canaries' ranks with them. So the tokens that go before a text are decided in
one of three ways (:func:`decide_special_tokens`), and the decision is a
:class:`~privaudit._core.conventions.Convention`:

* **explicit**: ``bos="prepend"`` or ``bos="none"`` (``--bos``);
* **checked, post-processor**: the tokenizer adds tokens itself (its encoding
  with and without ``add_special_tokens`` differ): the ones it puts before
  the text are used;
* **checked, corpus lines**: the tokenizer declares a BOS but does not add
  it (GPT-2's tokenizers): lines the model was trained on are scored both
  ways, and the way the model finds more likely is taken, if the margin is
  clear (:data:`MIN_Z` standard errors and :data:`MIN_RELATIVE_MARGIN` of a
  line's bits); otherwise the decision is refused, naming the option;
* **checked, nothing**: no BOS declared and none added.

Tokens after a text (an EOS the training format or the post-processor puts
there) are never scored: the scored span ends at the canary's last token, and
a causal LM's predictions of earlier tokens do not see later ones.

>>> class Tokenizer:  # adds nothing, declares no BOS
...     bos_token, bos_token_id = None, None
...     def __call__(self, text, add_special_tokens=True):
...         return {"input_ids": [ord(c) for c in text]}
>>> decide_special_tokens(Tokenizer()).convention.describe()
'special tokens: none (checked: the tokenizer adds no special tokens and declares no BOS)'
>>> decide_special_tokens(Tokenizer(), bos="prepend")
Traceback (most recent call last):
...
ValueError: `--bos` must be 'auto' or 'none' for a tokenizer that declares no BOS token, got 'prepend'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np

from .._core.conventions import Convention, checked, explicit
from .._core.validation import check_choice

__all__ = ["BOS_CHOICES", "CHECK_LINES", "MIN_RELATIVE_MARGIN", "MIN_Z", "SpecialTokens", "added_tokens", "decide_special_tokens"]

BOS_CHOICES = ("auto", "prepend", "none")
CHECK_LINES = 256  # corpus lines scored each way, at most
MIN_CHECK_LINES = 8  # fewer usable lines than this cannot settle it
MIN_Z = 4.0  # the mean per-line difference must be this many standard errors from 0 ...
MIN_RELATIVE_MARGIN = 0.02  # ... and this fraction of the more likely way's bits per line
_PROBES = ("privaudit 0 a", "x")
NAME = "special tokens"


@dataclasses.dataclass(frozen=True)
class SpecialTokens:
    """``leading``: the token ids put before every text; ``convention``: what was decided, and how."""

    leading: tuple[int, ...]
    convention: Convention


def _ids(tokenizer, text: str, special: bool) -> list[int]:
    return [int(token) for token in tokenizer(text, add_special_tokens=special)["input_ids"]]


def added_tokens(tokenizer) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """(before, after): the ids the tokenizer's post-processor adds around a text, the same for every probe text."""
    found = set()
    for probe in _PROBES:
        plain, framed = _ids(tokenizer, probe, False), _ids(tokenizer, probe, True)
        starts = [start for start in range(len(framed) - len(plain) + 1) if framed[start : start + len(plain)] == plain]
        if not plain or not starts:
            raise ValueError(f"`--bos`: the tokenizer's special tokens do not frame the text ({plain} becomes {framed}); pass --bos prepend or --bos none")
        found.add((tuple(framed[: starts[0]]), tuple(framed[starts[0] + len(plain) :])))
    if len(found) != 1:
        raise ValueError(f"`--bos`: the tokenizer adds different special tokens to different texts {sorted(found)}; pass --bos prepend or --bos none")
    return found.pop()


def _bos(tokenizer) -> tuple[str | None, int | None]:
    return getattr(tokenizer, "bos_token", None), getattr(tokenizer, "bos_token_id", None)


def decide_special_tokens(
    tokenizer,
    *,
    bos: str = "auto",
    lines: Sequence[str] | Callable[[], Sequence[str]] | None = None,
    line_bits: Callable[[list[list[int]], int], np.ndarray] | None = None,
    max_tokens: int | None = None,
    seed: int = 0,
) -> SpecialTokens:
    """The tokens before every text, decided as the module docstring says.

    ``lines`` are texts the model was trained on, or a function that reads
    them (called only when needed; its ValueError says why there are none);
    ``line_bits(rows, skip)`` returns the bits of each token row from
    position ``skip`` on. Both are needed only when the tokenizer declares a
    BOS that it does not add. At most :data:`CHECK_LINES` lines, drawn with
    ``seed``, are scored, each cut to ``max_tokens`` tokens with the BOS.
    """
    check_choice(bos, "bos", BOS_CHOICES)
    token, token_id = _bos(tokenizer)
    if bos == "prepend":
        if token_id is None:
            raise ValueError(f"`--bos` must be 'auto' or 'none' for a tokenizer that declares no BOS token, got {bos!r}")
        return SpecialTokens((int(token_id),), explicit(NAME, f"BOS {token!r} (id {token_id}) before each text", "--bos prepend"))
    if bos == "none":
        return SpecialTokens((), explicit(NAME, "none", "--bos none"))
    before, after = added_tokens(tokenizer)
    trailing = f"; after it {list(after)}, never scored (the scored span ends at the canary's last token)" if after else ""
    if before:
        return SpecialTokens(before, checked(NAME, f"{list(before)} before each text", f"what the tokenizer's post-processor adds{trailing}"))
    if token_id is None:
        evidence = "the tokenizer adds no special tokens and declares no BOS" if not after else f"the tokenizer declares no BOS{trailing}"
        return SpecialTokens((), checked(NAME, "none", evidence))
    corpus_option = lines is not None  # a command that reads corpus lines (--bos-corpus); lm-one-run has none to offer
    if callable(lines):
        lines = lines()
    if not lines or line_bits is None:
        raise ValueError(
            f"`--bos`: the tokenizer declares BOS {token!r} but does not add it, and no corpus lines were given to check how the model was trained; "
            f"pass --bos prepend (trained with {token!r} before each text) or --bos none (trained without)"
            + (", or --bos-corpus FILE" if corpus_option else "")
        )
    return _check_on_lines(tokenizer, int(token_id), str(token), lines, line_bits, max_tokens, seed)


def _check_on_lines(tokenizer, token_id: int, token: str, lines, line_bits, max_tokens, seed) -> SpecialTokens:
    """Score lines with and without the BOS (the same tokens: the second on) and take the more likely way, if clear."""
    limit = (max_tokens or 10**9) - 1
    rows = [ids[:limit] for ids in (_ids(tokenizer, line, False) for line in lines) if len(ids) >= 2]
    if len(rows) > CHECK_LINES:
        rows = [rows[index] for index in sorted(np.random.default_rng(seed).choice(len(rows), CHECK_LINES, replace=False))]
    if len(rows) < MIN_CHECK_LINES:
        raise ValueError(
            f"`--bos`: {len(rows)} corpus lines of 2 tokens or more cannot tell whether the model was trained with BOS {token!r} "
            f"(at least {MIN_CHECK_LINES} are needed); pass --bos prepend or --bos none"
        )
    with_bos = line_bits([[token_id, *row] for row in rows], 2)
    without = line_bits(rows, 1)
    difference = with_bos - without
    n = len(rows)
    spread = float(np.std(difference, ddof=1)) / np.sqrt(n)
    margin = float(np.mean(difference))
    z = margin / spread if spread > 0 else (0.0 if margin == 0 else float(np.copysign(np.inf, margin)))
    evidence = f"mean bits per line {np.mean(with_bos):.4g} with BOS, {np.mean(without):.4g} without, over {n} corpus lines (z = {z:.3g})"
    if abs(z) < MIN_Z or abs(margin) < MIN_RELATIVE_MARGIN * min(np.mean(with_bos), np.mean(without)):
        raise ValueError(
            f"`--bos`: the model finds its corpus lines about as likely with BOS {token!r} as without ({evidence}); pass --bos prepend or --bos none"
        )
    if margin < 0:
        return SpecialTokens((token_id,), checked(NAME, f"BOS {token!r} (id {token_id}) before each text", evidence))
    return SpecialTokens((), checked(NAME, "none", f"{evidence}; the tokenizer declares BOS {token!r} but does not add it"))
