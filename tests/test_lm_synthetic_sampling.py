"""Synthetic text sampled from a causal LM: draws follow the model's tempered top-k distribution, records end at EOS, seeds repeat, global RNGs untouched."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
stats = pytest.importorskip("scipy.stats")

from rng_helpers import assert_same_rng_states, global_rng_states, seed_everything  # noqa: E402

from privaudit.audits.lm.tiny import bpe_tokenizer, tiny_gpt2  # noqa: E402
from privaudit.canaries.lm_sampling import sample_synthetic_texts, sample_token_ids  # noqa: E402

TEXTS = ["the cat sat on the mat", "a dog ran in the park", "the bird flew over the house"] * 10


@pytest.fixture(scope="module")
def tiny():
    """A GPT-2 of random weights (its next-token distribution far from uniform: weights scaled up) and a BPE tokenizer with an EOS token."""
    tokenizer = bpe_tokenizer(TEXTS, vocab_size=280)
    tokenizer.add_special_tokens({"eos_token": "<|endoftext|>"})
    model = tiny_gpt2(tokenizer, seed=0, n_embd=32, n_positions=32)
    with torch.no_grad():
        model.lm_head.weight.mul_(20.0)  # tied to the input embeddings: peaked next-token probabilities
    return model, tokenizer


@pytest.mark.parametrize(("temperature", "top_k"), [(1.0, None), (0.7, 5), (2.0, 12)])
def test_draws_follow_the_models_tempered_top_k_distribution(tiny, temperature, top_k):
    model, tokenizer = tiny
    prompt = tokenizer("the cat", add_special_tokens=False)["input_ids"]
    with torch.no_grad():  # the oracle: one plain forward pass
        logits = model(input_ids=torch.tensor([prompt])).logits[0, -1].double().numpy() / temperature
    kept = np.argsort(logits)[::-1][: top_k or len(logits)]
    expected = np.zeros(len(logits))
    expected[kept] = np.exp(logits[kept] - logits[kept].max())
    expected /= expected.sum()
    draws = 6000
    rows = sample_token_ids(model, [prompt] * draws, new_tokens=1, temperature=temperature, top_k=top_k, seed=int(np.random.default_rng().integers(2**31)))
    counts = np.bincount([row[-1] for row in rows], minlength=len(logits))
    assert all(row[:-1] == prompt for row in rows)
    assert counts[expected == 0].sum() == 0  # nothing outside the top k
    common = expected * draws >= 5  # chi-square over tokens expected 5 times or more, the rest pooled
    observed = np.r_[counts[common], counts[~common].sum()]
    wanted = np.r_[expected[common], expected[~common].sum()] * draws
    keep = wanted > 0
    assert stats.chisquare(observed[keep], wanted[keep] * observed[keep].sum() / wanted[keep].sum()).pvalue > 1e-6


def test_top_one_is_the_greedy_continuation(tiny):
    model, tokenizer = tiny
    ids = tokenizer("a dog", add_special_tokens=False)["input_ids"]
    greedy = list(ids)
    with torch.no_grad():
        for _ in range(6):
            greedy.append(int(model(input_ids=torch.tensor([greedy])).logits[0, -1].argmax()))
    assert sample_token_ids(model, [ids], new_tokens=6, top_k=1, seed=int(np.random.default_rng().integers(2**31)))[0] == greedy


class _EveryOther(torch.nn.Module):
    """Next token: ``token`` after an odd-length sequence, ``eos`` after an even-length one."""

    def __init__(self, size, token, eos):
        super().__init__()
        self.size, self.token, self.eos = size, token, eos
        self.weight = torch.nn.Parameter(torch.zeros(1))

    def forward(self, input_ids):
        logits = torch.full((*input_ids.shape, self.size), -1e9)
        logits[:, -1, self.token if input_ids.shape[1] % 2 else self.eos] = 0.0
        return type("Output", (), {"logits": logits})()


def test_records_are_the_prompt_and_its_continuation_cut_at_eos_one_line_each(tiny):
    _, tokenizer = tiny
    token = tokenizer.convert_tokens_to_ids("t")
    model = _EveryOther(len(tokenizer), token, tokenizer.eos_token_id)
    prompts = ["a", "the cat\nsat", "dog"]
    lengths = [len(tokenizer(p, add_special_tokens=False)["input_ids"]) for p in prompts]
    records = sample_synthetic_texts(model, tokenizer, prompts, max_new_tokens=5, seed=1)
    # an odd-length prompt gets "t" then EOS; an even-length one EOS at once
    assert records == [p.replace("\n", " ") + ("t" if n % 2 else "") for p, n in zip(prompts, lengths, strict=True)]


def test_same_seed_same_records_and_the_global_rngs_and_model_mode_are_left_alone(tiny):
    model, tokenizer = tiny
    model.train()
    seed_everything(int(np.random.default_rng().integers(2**31)))
    before = global_rng_states()
    first = sample_synthetic_texts(model, tokenizer, ["the", "a dog", "the"], max_new_tokens=8, temperature=5.0, seed=3)
    assert_same_rng_states(before, global_rng_states())
    assert model.training
    model.eval()
    assert first == sample_synthetic_texts(model, tokenizer, ["the", "a dog", "the"], max_new_tokens=8, temperature=5.0, seed=3)
    assert first != sample_synthetic_texts(model, tokenizer, ["the", "a dog", "the"], max_new_tokens=8, temperature=5.0, seed=4)


def test_an_empty_prompt_starts_from_the_bos_token(tiny):
    model, tokenizer = tiny
    tokenizer = tokenizer.__class__(tokenizer_object=tokenizer.backend_tokenizer, bos_token="<|endoftext|>", eos_token="<|endoftext|>")
    ids = sample_token_ids(model, [[tokenizer.bos_token_id]], new_tokens=4, seed=5)[0][1:]
    cut = ids[: ids.index(tokenizer.eos_token_id)] if tokenizer.eos_token_id in ids else ids
    expected = " ".join(tokenizer.decode(cut, clean_up_tokenization_spaces=False).splitlines())
    assert sample_synthetic_texts(model, tokenizer, [""], max_new_tokens=4, seed=5) == [expected]


@pytest.mark.parametrize(
    ("prompts", "options", "match"),
    [
        ([""], {}, "`prompts`: an empty prompt starts from the BOS token"),
        ("the", {}, "`prompts` must be a non-empty sequence of strings"),
        (["the"], {"max_new_tokens": 40}, "`max_new_tokens` must leave the longest prompt within the model's 32 positions"),
        (["the"], {"temperature": 0.0}, "`temperature` must be"),
        (["the"], {"top_k": 0}, "`top_k` must be"),
        (["the"], {"max_new_tokens": 0}, "`max_new_tokens` must be"),
    ],
)
def test_bad_arguments_are_refused_naming_them(tiny, prompts, options, match):
    model, tokenizer = tiny
    with pytest.raises(ValueError, match=match.replace("(", r"\(")):
        sample_synthetic_texts(model, tokenizer, prompts, **options)
