"""Scoring Hugging Face causal language models: log-perplexity in bits, with KV-cache reuse.

Any ``transformers`` causal LM and its tokenizer work. A candidate's
log-perplexity is the sum over its tokens of -log2 Pr(token | everything
before it). The prefix and each completion are tokenised separately and
concatenated, so every candidate of a format shares the prefix's tokens, and
the prefix's key/value cache is computed once and repeated for each batch.
"""

from __future__ import annotations

import copy

import numpy as np

from .device import default_device, pad_rows, require_torch

__all__ = ["HFCausalLMScorer"]

_LN2 = np.log(2.0)


class HFCausalLMScorer:
    """Batched log-perplexity of texts, or of completions after a shared prefix, under a causal LM."""

    def __init__(self, model, tokenizer, *, device=None, batch_size: int = 64):
        self.torch = require_torch()
        self.device = default_device(device)
        self.model = model.to(self.device).eval()
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.queries = 0

    def _ids(self, text: str) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def _sum_log_probs(self, logits, targets, mask):
        log_probs = self.torch.log_softmax(logits.double(), dim=-1)
        picked = log_probs.gather(2, targets[:, :, None]).squeeze(-1)
        return (picked * mask).sum(1)

    def log_perplexity(self, texts) -> np.ndarray:
        """Bits for each whole text; its first token is conditioned on nothing but the model's start."""
        torch = self.torch
        texts = list(texts)
        out = np.empty(len(texts))
        for start in range(0, len(texts), self.batch_size):
            encoded = [self._ids(text) for text in texts[start : start + self.batch_size]]
            if min(len(ids) for ids in encoded) < 2:
                raise ValueError("`texts` must each have at least 2 tokens")
            tokens, mask = pad_rows(encoded, self.device)
            with torch.no_grad():
                logits = self.model(input_ids=tokens, attention_mask=mask.long()).logits
            self.queries += len(encoded)
            total = self._sum_log_probs(logits[:, :-1], tokens[:, 1:], mask[:, 1:])
            out[start : start + len(encoded)] = -total.cpu().numpy() / _LN2
        return out

    def completion_log_perplexities(self, prefix: str, completions) -> np.ndarray:
        """Bits of each completion given ``prefix``; the prefix runs once, its cache is reused."""
        torch = self.torch
        prefix_ids = self._ids(prefix)
        if not prefix_ids:
            raise ValueError("`prefix` must have at least 1 token")
        context_limit = getattr(self.model.config, "n_positions", None) or getattr(self.model.config, "max_position_embeddings", None)
        with torch.no_grad():
            prefix_out = self.model(input_ids=torch.as_tensor([prefix_ids], device=self.device), use_cache=True)
        self.queries += 1
        first_log_probs = torch.log_softmax(prefix_out.logits[0, -1].double(), dim=-1)
        completions = list(completions)
        out = np.empty(len(completions))
        for start in range(0, len(completions), self.batch_size):
            encoded = [self._ids(text) for text in completions[start : start + self.batch_size]]
            if min(len(ids) for ids in encoded) < 1:
                raise ValueError("`completions` must each have at least 1 token")
            width = max(len(ids) for ids in encoded)
            if context_limit is not None and len(prefix_ids) + width > context_limit:
                raise ValueError(f"canaries must fit the model's context of {context_limit} tokens, got {len(prefix_ids) + width}")
            n = len(encoded)
            tokens, mask = pad_rows(encoded, self.device)
            cache = copy.deepcopy(prefix_out.past_key_values)
            cache.batch_repeat_interleave(n)
            attention = torch.ones((n, len(prefix_ids) + width), dtype=torch.long, device=self.device)
            attention[:, len(prefix_ids) :] = mask.long()
            with torch.no_grad():
                logits = self.model(input_ids=tokens, attention_mask=attention, past_key_values=cache, use_cache=True).logits
            self.queries += n
            first = first_log_probs[tokens[:, 0]]
            rest = self._sum_log_probs(logits[:, :-1], tokens[:, 1:], mask[:, 1:]) if width > 1 else 0.0
            out[start : start + n] = -(first + rest).cpu().numpy() / _LN2
        return out
