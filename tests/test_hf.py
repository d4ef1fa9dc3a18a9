"""The Hugging Face adapter on a randomly initialised GPT-2 built from a config (nothing downloaded)."""

from __future__ import annotations

import string

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from privaudit.canaries import CanaryFormat  # noqa: E402
from privaudit.models.hf import HFCausalLMScorer  # noqa: E402


@pytest.fixture(scope="module")
def tiny_gpt2():
    symbols = ["[UNK]"] + list(string.printable[:95])
    vocab = {symbol: index for index, symbol in enumerate(symbols)}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Split("", behavior="isolated")  # one token per character
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(symbols), n_positions=64, n_embd=32, n_layer=2, n_head=2)
    model = transformers.GPT2LMHeadModel(config).eval()
    return model, tokenizer


def hand_log_perplexity(model, ids: list[int], start: int) -> float:
    """-Σ log2 softmax(logits)[next token] from position ``start``, one full forward pass."""
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0].double()
    log_probs = logits - torch.logsumexp(logits, dim=-1, keepdim=True)  # log-softmax by hand
    return -sum(float(log_probs[i - 1, ids[i]]) for i in range(start, len(ids))) / np.log(2)


def test_texts_match_a_hand_written_log_softmax(tiny_gpt2):
    model, tokenizer = tiny_gpt2
    scorer = HFCausalLMScorer(model, tokenizer, batch_size=3)
    texts = ["my pin is 123456", "hello", "a longer sentence, with punctuation!", "xy"]
    values = scorer.log_perplexity(texts)
    for text, value in zip(texts, values, strict=True):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        assert value == pytest.approx(hand_log_perplexity(model, ids, 1), abs=1e-6)


def test_completions_reuse_the_prefix_cache_and_agree(tiny_gpt2):
    model, tokenizer = tiny_gpt2
    fmt = CanaryFormat("my pin is {digits:2}")
    completions = [canary.text[len(fmt.prefix) :] for canary in fmt.enumerate()]
    scorer = HFCausalLMScorer(model, tokenizer, batch_size=32)
    values = scorer.completion_log_perplexities(fmt.prefix, completions)
    prefix_ids = tokenizer(fmt.prefix, add_special_tokens=False)["input_ids"]
    for index in (0, 42, 99):
        ids = prefix_ids + tokenizer(completions[index], add_special_tokens=False)["input_ids"]
        assert values[index] == pytest.approx(hand_log_perplexity(model, ids, len(prefix_ids)), abs=1e-6)
    assert scorer.queries == 1 + len(completions)


def test_canaries_longer_than_the_context_are_refused(tiny_gpt2):
    model, tokenizer = tiny_gpt2
    with pytest.raises(ValueError, match="context of 64 tokens"):
        HFCausalLMScorer(model, tokenizer).completion_log_perplexities("pin ", ["9" * 80])
