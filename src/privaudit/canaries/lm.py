"""Canary designs for auditing causal-LM fine-tuning (Panda et al. 2025; Meeus et al. 2025).

A canary is a ``prefix`` and a ``secret``; its text is ``prefix + secret``.
Six designs draw the secrets, each from a seeded numpy Generator:

* ``random-tokens``: tokens drawn uniformly from the tokenizer's ordinary
  vocabulary (the Secret Sharer's random canaries, in tokens);
* ``new-tokens``: tokens added to the vocabulary for the audit
  (:func:`add_new_tokens` resizes a copy of the tokenizer and the
  embeddings with transformers' own API; the user fine-tunes that model),
  each new token in one canary only, so an embedding row moves with its
  own canary's inclusion alone; with ``prefix=None`` each canary's prefix
  is a new token of its own too;
* ``least-likely``: tokens the base model is least likely to predict
  after the prefix;
* ``bigram``: a chain sampled from the bigram counts of the fine-tuning data;
* ``high-temperature``: a sample of the base model at a high temperature;
* ``prefix-suffix``: an in-distribution prefix (a line of the data's first
  words) and a high-perplexity suffix of random tokens, for synthetic-text audits.

Which canaries are included is drawn by fair coins, and everything needed to
score them later is recorded in an :class:`~privaudit.canaries.lm_provenance.LMProvenance`
(:func:`~privaudit.canaries.lm_provenance.prepare_lm_canaries`).

>>> import numpy as np
>>> tokens = ordinary_token_ids(_Toy())
>>> tokens
[0, 1, 3]
>>> secret_from_ids(_Toy(), [3, 0])
'cA'
"""

from __future__ import annotations

import copy
import unicodedata
from collections.abc import Sequence

import numpy as np

__all__ = [
    "DESIGNS",
    "NEEDS_BASE_MODEL",
    "NEW_ROWS",
    "NEEDS_TEXTS",
    "add_new_tokens",
    "bigram_secrets",
    "draw_secrets",
    "expected_new_rows",
    "high_temperature_secrets",
    "least_likely_secrets",
    "new_token_names",
    "ordinary_token_ids",
    "random_token_secrets",
    "secret_from_ids",
    "usable_token_ids",
]

DESIGNS = ("random-tokens", "new-tokens", "least-likely", "bigram", "high-temperature", "prefix-suffix")
NEEDS_BASE_MODEL = ("least-likely", "high-temperature")
NEEDS_TEXTS = ("bigram", "prefix-suffix")


class _Toy:
    """A four-token tokenizer for the doctests: one special token, id 2."""

    all_special_ids = [2]

    def get_vocab(self):
        return {"A": 0, "b": 1, "<s>": 2, "c": 3}

    def get_added_vocab(self):
        return {}

    def decode(self, ids, **_):
        names = {v: k for k, v in self.get_vocab().items()}
        return "".join(names[i] for i in ids)


def ordinary_token_ids(tokenizer) -> list[int]:
    """The token ids of the vocabulary less special and added tokens, sorted: what random secrets draw from."""
    excluded = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    return sorted(i for i in tokenizer.get_vocab().values() if i not in excluded)


def _printable(text: str) -> bool:
    # control and format characters, and line or paragraph breaks, would split a canary across a line-based corpus's records
    return all(not unicodedata.category(char).startswith(("C", "Zl", "Zp")) for char in text)


def usable_token_ids(tokenizer) -> list[int]:
    """What secrets draw from: the ordinary tokens whose text tokenises back to the token alone (a lone byte of a multi-byte character does not), without control characters or line breaks."""
    ids = ordinary_token_ids(tokenizer)
    texts = [secret_from_ids(tokenizer, [i]) for i in ids]
    encoded = tokenizer(texts, add_special_tokens=False)["input_ids"]
    return [i for i, text, row in zip(ids, texts, encoded, strict=True) if list(row) == [i] and _printable(text)]


def secret_from_ids(tokenizer, ids: Sequence[int]) -> str:
    """The text of token ids (the scorer tokenises the canary's full text again, so merges across tokens are scored as the model sees them)."""
    return str(tokenizer.decode([int(i) for i in ids], skip_special_tokens=False, clean_up_tokenization_spaces=False))


def random_token_secrets(tokenizer, count: int, length: int, rng: np.random.Generator | int = 0, pool: Sequence[int] | None = None) -> list[str]:
    """``count`` secrets of ``length`` tokens drawn uniformly from ``pool`` (default: the ordinary vocabulary)."""
    rng = np.random.default_rng(rng)  # a seed or a Generator, as the callers have it
    choices = np.asarray(usable_token_ids(tokenizer) if pool is None else pool)
    return [secret_from_ids(tokenizer, rng.choice(choices, size=length).tolist()) for _ in range(count)]


def new_token_names(count: int, seed: int = 0) -> list[str]:
    """Names of ``count`` new tokens, tagged with the seed so two audits' tokens differ."""
    return [f"<|pa{seed % 100000}_{index}|>" for index in range(count)]


def add_new_tokens(model, tokenizer, names: Sequence[str], *, seed: int = 0):
    """Copies of ``model`` and ``tokenizer`` with ``names`` added as tokens and the embeddings resized by transformers (new rows drawn under ``seed``).

    The user's objects and the global RNG state are left as they are.
    """
    import torch

    tokenizer, model = copy.deepcopy(tokenizer), copy.deepcopy(model)
    existing = set(tokenizer.get_vocab())
    clashing = [name for name in names if name in existing]
    if clashing:
        raise ValueError(f"the tokenizer already has the new tokens {clashing[:3]}: pick another seed")
    tokenizer.add_tokens(list(names))
    with torch.random.fork_rng(devices=[]):  # transformers draws the new rows from the global generator
        torch.manual_seed(seed)
        model.resize_token_embeddings(len(tokenizer))
    return model, tokenizer


NEW_ROWS = ("mean", "expected")


def expected_new_rows(model, new_ids: Sequence[int], context_ids: Sequence[int], *, iterations: int = 50) -> float:
    """Set every new token's output embedding row, in place, to the base model's expected output row after ``context_ids``; the largest change of the last iteration.

    A canary's loss on a scored new token b has gradient (p_b - 1) h in b's
    own output row, and (E p[E] - E[b]) through the hidden state h into
    every shared weight. With E[b] the expected row E p[E] after the
    canary's context, the shared part vanishes at the start, so the clipped
    gradient moves rows of the canary's own but for p_j h on every other
    token's row (over 99% of its norm in ``tests/test_lm_canaries.py``,
    against 58% from transformers' start). With tied embeddings the rows are also
    the new tokens' inputs, which change the context: the rows are iterated
    to the fixed point. Only the starting weights of the audit's own new
    tokens change; DP's accounting holds for any start.

    >>> import torch, transformers
    >>> config = transformers.GPT2Config(vocab_size=12, n_embd=8, n_layer=1, n_head=2, n_positions=8)
    >>> model = transformers.GPT2LMHeadModel(config).eval()
    >>> expected_new_rows(model, [10, 11], [10]) < 1e-6
    True
    """
    import torch

    output = model.get_output_embeddings().weight
    rows = torch.as_tensor(list(new_ids), device=output.device)
    context = torch.as_tensor([list(context_ids)], device=model.get_input_embeddings().weight.device)
    change = float("inf")
    training = model.training
    model.eval()  # dropout off: the rows are a function of the weights, and no global generator is drawn from
    try:
        with torch.no_grad():
            for _ in range(iterations):
                probabilities = torch.softmax(model(input_ids=context).logits[0, -1].double(), dim=-1).to(output.device)
                target = (probabilities @ output.double()).to(output.dtype)
                change = float((output[rows] - target).abs().max())
                output[rows] = target
                if change < 1e-7:
                    break
    finally:
        model.train(training)
    return change


def _next_token_log_probs(model, tokenizer, prefix: str):
    """The base model's natural-log probabilities of the token after ``prefix`` (full-text tokenisation)."""
    import torch

    ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    if not ids:
        raise ValueError("`prefix` must not be empty: the base model predicts the secret from it")
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            logits = model(input_ids=torch.as_tensor([ids], device=next(model.parameters()).device)).logits[0, -1]
    finally:
        model.train(training)
    return torch.log_softmax(logits.double(), dim=-1).cpu().numpy()


def least_likely_secrets(model, tokenizer, prefix: str, count: int, length: int, rng: np.random.Generator | int = 0, pool_size: int = 64) -> list[str]:
    """Secrets of tokens drawn uniformly from the ``pool_size`` usable tokens the base model finds least likely after ``prefix``."""
    rng = np.random.default_rng(rng)  # a seed or a Generator, as the callers have it
    log_probs = _next_token_log_probs(model, tokenizer, prefix)
    ordinary = np.asarray([i for i in usable_token_ids(tokenizer) if i < len(log_probs)])
    pool = ordinary[np.argsort(log_probs[ordinary], kind="stable")[:pool_size]]
    return random_token_secrets(tokenizer, count, length, rng, pool=pool.tolist())


def bigram_secrets(tokenizer, texts: Sequence[str], prefix: str, count: int, length: int, rng: np.random.Generator | int = 0) -> list[str]:
    """Chains sampled from the bigram counts of ``texts`` (the fine-tuning data), starting after the prefix's last token; unigram where a token has no successor."""
    rng = np.random.default_rng(rng)  # a seed or a Generator, as the callers have it
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    successors: dict[int, list[int]] = {}
    unigram: list[int] = []
    for row in rows:
        unigram.extend(row)
        for left, right in zip(row[:-1], row[1:], strict=True):
            successors.setdefault(int(left), []).append(int(right))
    if not unigram:
        raise ValueError("`texts` must hold some tokens for bigram canaries")
    start = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    out = []
    for _ in range(count):
        previous, chain = int(start[-1]) if start else -1, []
        for _ in range(length):
            options = successors.get(previous) or unigram
            previous = int(options[int(rng.integers(len(options)))])
            chain.append(previous)
        out.append(secret_from_ids(tokenizer, chain))
    return out


def high_temperature_secrets(model, tokenizer, prefix: str, count: int, length: int, rng: np.random.Generator | int = 0, temperature: float = 2.0) -> list[str]:
    """Samples of ``length`` tokens from the base model after ``prefix`` at ``temperature``, from a private torch Generator (no global RNG)."""
    rng = np.random.default_rng(rng)  # a seed or a Generator, as the callers have it
    import torch

    if not temperature > 0:
        raise ValueError(f"`temperature` must be > 0, got {temperature!r}")
    from .lm_sampling import sample_token_ids

    device = next(model.parameters()).device
    generator = torch.Generator(device=device).manual_seed(int(rng.integers(2**62)))
    ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    allowed = torch.full((model.get_output_embeddings().weight.shape[0],), float("-inf"), device=device)
    allowed[[i for i in usable_token_ids(tokenizer) if i < len(allowed)]] = 0.0
    rows = sample_token_ids(model, [ids] * count, new_tokens=length, temperature=temperature, allowed=allowed, seed=generator)
    return [secret_from_ids(tokenizer, row[len(ids) :]) for row in rows]


def data_prefixes(texts: Sequence[str], count: int, words: int, rng: np.random.Generator) -> list[str]:
    """In-distribution prefixes: the first ``words`` words of lines of the data drawn at random, with a trailing space."""
    usable = [text.split()[:words] for text in texts if len(text.split()) >= words]
    if not usable:
        raise ValueError(f"`texts` must hold lines of at least {words} words for in-distribution prefixes")
    return [" ".join(usable[int(rng.integers(len(usable)))]) + " " for _ in range(count)]


def draw_secrets(
    design: str,
    tokenizer,
    *,
    count: int,
    length: int,
    prefix: str | None,
    rng: np.random.Generator | int = 0,
    model=None,
    texts=(),
    new_tokens=(),
    temperature: float = 2.0,
):
    """(prefixes, secrets) of ``count`` canaries of ``design``; ``new_tokens`` must already be in ``tokenizer`` (:func:`add_new_tokens`).

    ``prefix`` None is for "new-tokens" only: each canary's prefix is one of the new tokens.
    """
    rng = np.random.default_rng(rng)  # a seed or a Generator, as the callers have it
    if prefix is None and design != "new-tokens":
        raise ValueError(f"`prefix` must be a string for design {design!r}; None (a new-token prefix of each canary's own) is for new-tokens only")
    if design == "new-tokens":
        # each new token in one canary only: a token shared by an included and an excluded canary would lift the excluded one's score
        own = prefix is None  # each canary's prefix is a new token of its own
        width = length + own
        ids = np.array([int(tokenizer.convert_tokens_to_ids(name)) for name in new_tokens])
        if ids.size < count * width:
            raise ValueError(f"`new_tokens` must hold {count * width} tokens, one per canary token, got {ids.size}")
        rows = rng.permutation(ids)[: count * width].reshape(count, width)
        prefixes = [secret_from_ids(tokenizer, row[:1].tolist()) for row in rows] if own else [prefix] * count
        return prefixes, [secret_from_ids(tokenizer, row[own:].tolist()) for row in rows]
    assert prefix is not None  # checked above
    if design == "random-tokens":
        return [prefix] * count, random_token_secrets(tokenizer, count, length, rng)
    if design == "least-likely":
        return [prefix] * count, least_likely_secrets(model, tokenizer, prefix, count, length, rng)
    if design == "bigram":
        return [prefix] * count, bigram_secrets(tokenizer, texts, prefix, count, length, rng)
    if design == "high-temperature":
        return [prefix] * count, high_temperature_secrets(model, tokenizer, prefix, count, length, rng, temperature)
    prefixes = data_prefixes(texts, count, 4, rng)
    return prefixes, random_token_secrets(tokenizer, count, length, rng)
