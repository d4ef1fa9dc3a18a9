"""Synthetic text sampled from a causal LM: what a fine-tuned model releases instead of its data (Meeus et al. 2025).

:func:`sample_synthetic_texts` continues each prompt with ``max_new_tokens``
tokens, each drawn from the model's next-token distribution at
``temperature``, restricted to the ``top_k`` most likely tokens when given.
A prompt may be the empty string: the record then starts from the
tokenizer's BOS token, unconditional generation (a tokenizer without one is
refused). Meeus et al. prompt their fine-tuned model with a fixed template,
so its samples are in-distribution records; where the model has no such
template, prompting with the first words of the data's lines
(:func:`~privaudit.canaries.lm.data_prefixes`) plays that part. Each record is
its prompt and the tokens drawn, decoded together, cut at the first EOS
token, with line breaks made spaces and NUL characters dropped, so that the
corpus is written as a text file, one record a line.

Every draw comes from a private ``torch.Generator`` seeded by ``seed``: the
global RNG states are left as they were, and the model's mode too.

>>> import torch
>>> class Uniform(torch.nn.Module):  # a "model" whose next token is uniform over 4
...     def forward(self, input_ids):
...         return type("Out", (), {"logits": torch.zeros(*input_ids.shape, 4)})()
>>> rows = sample_token_ids(Uniform(), [[0], [1, 2]], new_tokens=3, seed=0)
>>> [len(row) for row in rows], rows == sample_token_ids(Uniform(), [[0], [1, 2]], new_tokens=3, seed=0)
([4, 5], True)
"""

from __future__ import annotations

from collections.abc import Sequence

from .._core.seeding import check_seed
from .._core.validation import check_count, check_positive

__all__ = ["sample_synthetic_texts", "sample_token_ids"]


def sample_token_ids(
    model,
    prompts: Sequence[Sequence[int]],
    *,
    new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    seed=0,
    allowed=None,
    stop_token: int | None = None,
) -> list[list[int]]:
    """Each prompt's token ids followed by ``new_tokens`` ids drawn from ``model`` at ``temperature`` (``top_k``: only the most likely).

    ``allowed`` (optional) is a vector added to the logits (0 for allowed
    tokens, -inf for the others); ``seed`` is an integer that seeds a
    private torch Generator, or a Generator to draw from as it stands. Prompts of equal length
    are drawn as one batch, so no padding changes a score; a batch stops
    early once every row holds ``stop_token`` (when given) after its prompt.
    """
    import torch

    device = next(iter(model.parameters()), torch.empty(0)).device
    generator = seed if isinstance(seed, torch.Generator) else torch.Generator(device=device).manual_seed(int(seed))
    out: list[list[int]] = [[] for _ in prompts]
    lengths = sorted({len(prompt) for prompt in prompts})
    training = model.training
    model.eval()
    try:
        with torch.no_grad():
            for length in lengths:
                rows = [index for index, prompt in enumerate(prompts) if len(prompt) == length]
                tokens = torch.as_tensor([list(prompts[index]) for index in rows], dtype=torch.long, device=device)
                for _ in range(new_tokens):
                    logits = model(input_ids=tokens).logits[:, -1].double() / temperature
                    if allowed is not None:
                        logits = logits + allowed
                    if top_k is not None and top_k < logits.shape[-1]:
                        kept = torch.topk(logits, top_k, dim=-1)
                        logits = torch.full_like(logits, float("-inf")).scatter(-1, kept.indices, kept.values)
                    drawn = torch.multinomial(torch.softmax(logits, dim=-1), 1, generator=generator)
                    tokens = torch.cat([tokens, drawn], dim=1)
                    if stop_token is not None and bool((tokens[:, length:] == stop_token).any(dim=1).all()):
                        break
                for index, row in zip(rows, tokens.tolist(), strict=True):
                    out[index] = row
    finally:
        model.train(training)
    return out


def sample_synthetic_texts(
    model, tokenizer, prompts: Sequence[str], *, max_new_tokens: int = 24, temperature: float = 1.0, top_k: int | None = None, seed: int = 0
) -> list[str]:
    """One synthetic record per prompt: the prompt continued by ``model`` (``""``: from the BOS token), one line each.

    Raises ValueError, naming the argument, for a bad temperature, top-k or
    length, an empty prompt without a BOS token, or records longer than the
    model's context.
    """
    if isinstance(prompts, str) or not len(prompts):
        raise ValueError("`prompts` must be a non-empty sequence of strings, one per synthetic record")
    max_new_tokens = check_count(max_new_tokens, "max_new_tokens", minimum=1)
    check_positive(temperature, "temperature")
    if top_k is not None:
        check_count(top_k, "top_k", minimum=1)
    seed = check_seed(seed)
    bos: int | None = getattr(tokenizer, "bos_token_id", None)
    if any(prompt == "" for prompt in prompts) and bos is None:
        raise ValueError("`prompts`: an empty prompt starts from the BOS token, and this tokenizer has none; give each record a prompt")
    rows: list[list[int]] = [list(tokenizer(prompt, add_special_tokens=False)["input_ids"]) if prompt else [bos or 0] for prompt in prompts]
    limit = getattr(getattr(model, "config", None), "n_positions", None) or getattr(getattr(model, "config", None), "max_position_embeddings", None)
    longest = max(len(row) for row in rows) + max_new_tokens
    if limit is not None and longest > limit:
        raise ValueError(
            f"`max_new_tokens` must leave the longest prompt within the model's {limit} positions, got {max_new_tokens} (records of {longest} tokens)"
        )
    eos = getattr(tokenizer, "eos_token_id", None)
    drawn = sample_token_ids(model, rows, new_tokens=max_new_tokens, temperature=temperature, top_k=top_k, seed=seed, stop_token=eos)
    records = []
    for prompt_ids, row in zip(rows, drawn, strict=True):
        new = row[len(prompt_ids) :]
        if eos is not None and eos in new:
            new = new[: new.index(eos)]
        text = tokenizer.decode(row[: len(prompt_ids)] + new, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        records.append(" ".join(text.replace("\x00", "").splitlines()))
    return records
