"""The embedded default of the LM one-run audit: a tiny GPT-2 and a BPE tokenizer trained here, on privaudit's corpus.

Everything runs on CPU in seconds: a byte-level BPE tokenizer trained with
``tokenizers`` on lines of the default corpus (:mod:`privaudit.data.corpus`),
a GPT-2 from ``transformers.GPT2Config`` (well under 5M parameters, dropout
off), trained briefly on the corpus (the "base model") and then fine-tuned
on the corpus with the included canaries. Every random step draws from a
private ``torch.Generator`` or inside ``torch.random.fork_rng``, so the
global RNG state is left as it was.

>>> tokenizer = bpe_tokenizer(["the cat sat on the mat"] * 20, vocab_size=300)
>>> tokenizer("the cat", add_special_tokens=False)["input_ids"] == tokenizer("the cat", add_special_tokens=False)["input_ids"]
True
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

__all__ = ["bpe_tokenizer", "fine_tune", "tiny_gpt2"]


def bpe_tokenizer(texts: Sequence[str], *, vocab_size: int = 512):
    """A byte-level BPE tokenizer trained on ``texts``, as a transformers fast tokenizer (no special tokens are added to texts)."""
    import tokenizers
    import transformers

    backend = tokenizers.Tokenizer(tokenizers.models.BPE())
    backend.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(vocab_size=vocab_size, initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    backend.train_from_iterator(list(texts), trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=backend)


def tiny_gpt2(tokenizer, *, seed: int, n_embd: int = 64, n_layer: int = 2, n_positions: int = 64):
    """A GPT-2 with random weights drawn under ``seed`` (global RNG state restored), dropout off."""
    import torch
    import transformers

    config = transformers.GPT2Config(
        vocab_size=len(tokenizer),
        n_positions=n_positions,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=2,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=None,
        eos_token_id=None,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return transformers.GPT2LMHeadModel(config).eval()


def fine_tune(model, tokenizer, texts: Sequence[str], *, steps: int, seed: int, learning_rate: float = 3e-3, batch_size: int = 32):
    """A copy of ``model`` trained ``steps`` Adam steps on batches of ``texts`` drawn by a private generator (texts tokenised whole, no special tokens)."""
    import torch

    model = copy.deepcopy(model).train()
    limit = model.config.n_positions
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"][:limit] for text in texts]
    rows = [row for row in rows if len(row) >= 2]
    generator = torch.Generator().manual_seed(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=learning_rate)
    for _ in range(steps):
        chosen = torch.randint(len(rows), (min(batch_size, len(rows)),), generator=generator).tolist()
        width = max(len(rows[i]) for i in chosen)
        tokens = torch.zeros((len(chosen), width), dtype=torch.long)
        labels = torch.full((len(chosen), width), -100, dtype=torch.long)
        mask = torch.zeros((len(chosen), width), dtype=torch.long)
        for row, index in enumerate(chosen):
            ids = torch.as_tensor(rows[index])
            tokens[row, : len(ids)], labels[row, : len(ids)], mask[row, : len(ids)] = ids, ids, 1
        loss = model(input_ids=tokens, attention_mask=mask, labels=labels).loss
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()
