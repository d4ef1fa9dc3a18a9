"""Full-text scoring of canaries under a BPE tokenizer whose merges cross the prefix/secret boundary.

The oracle is independent of the scorer: the model's own loss on each full
token sequence (``labels=input_ids``), times the number of predicted tokens,
in bits. Differences between candidates cancel the shared prefix.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
tokenizers = pytest.importorskip("tokenizers")

from privaudit.audits.lm.tiny import bpe_tokenizer as trained_bpe_tokenizer
from privaudit.canaries import CanaryFormat
from privaudit.extraction import brute_force_search, shortest_path_search
from privaudit.models.hf import HFCausalLMScorer

FMT = CanaryFormat("my pin is {digits:2}")


def bpe_tokenizer():
    rng = np.random.default_rng(0)
    lines = [f"my pin is {rng.integers(0, 1000):03d}" for _ in range(300)] + ["the cat sat on the mat", "my pin is safe"] * 20
    return trained_bpe_tokenizer(lines, vocab_size=300)


@pytest.fixture(scope="module")
def bpe_gpt2():
    tokenizer = bpe_tokenizer()
    torch.manual_seed(0)
    config = transformers.GPT2Config(vocab_size=len(tokenizer), n_positions=32, n_embd=32, n_layer=2, n_head=2)
    model = transformers.GPT2LMHeadModel(config).double().eval()
    return model, tokenizer


def full_text_bits(model, tokenizer, texts) -> np.ndarray:
    """The oracle: the model's next-token cross-entropy over each full token sequence, summed, in bits.

    (Hugging Face's own ``labels=`` loss casts logits to float32, too coarse for 1e-6 bits.)
    """
    rows = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts]
    width = max(len(row) for row in rows)
    batch = torch.tensor([row + [0] * (width - len(row)) for row in rows])  # right padding: causal, so unseen
    with torch.no_grad():
        logits = model(input_ids=batch).logits
    out = []
    for row, row_logits in zip(rows, logits, strict=True):
        loss = torch.nn.functional.cross_entropy(row_logits[: len(row) - 1].double(), torch.tensor(row[1:]), reduction="sum")
        out.append(float(loss) / np.log(2))
    return np.array(out)


def separate_tokenisation_bits(model, tokenizer, prefix, completions) -> np.ndarray:
    """The old scorer: prefix and completion tokenised apart and concatenated."""
    prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
    rows = [prefix_ids + tokenizer(completion, add_special_tokens=False)["input_ids"] for completion in completions]
    width = max(len(row) for row in rows)
    with torch.no_grad():
        log_probs = torch.log_softmax(model(input_ids=torch.tensor([row + [0] * (width - len(row)) for row in rows])).logits, dim=-1)
    return np.array([-sum(float(lp[i - 1, ids[i]]) for i in range(len(prefix_ids), len(ids))) / np.log(2) for ids, lp in zip(rows, log_probs, strict=True)])


def test_the_tokenizer_merges_across_the_boundary(bpe_gpt2):
    _, tokenizer = bpe_gpt2
    prefix_ids = tokenizer(FMT.prefix, add_special_tokens=False)["input_ids"]
    full = tokenizer(FMT.fill((1, 2)), add_special_tokens=False)["input_ids"]
    assert full[: len(prefix_ids)] != prefix_ids  # "Ġ" + "12" is not how the full text tokenises


@pytest.fixture(scope="module")
def oracle(bpe_gpt2):
    return full_text_bits(*bpe_gpt2, [canary.text for canary in FMT.enumerate()])


@pytest.mark.parametrize("reuse", ["none", "prefix", "tree"])
def test_candidate_differences_equal_full_text_differences(bpe_gpt2, oracle, reuse):
    model, tokenizer = bpe_gpt2
    scores = HFCausalLMScorer(model, tokenizer, batch_size=16).format_log_perplexities(FMT, reuse=reuse)
    np.testing.assert_allclose(scores - scores[0], oracle - oracle[0], atol=1e-6, rtol=0)


def test_the_separate_tokenisation_scorer_fails_the_same_test(bpe_gpt2, oracle):
    model, tokenizer = bpe_gpt2
    texts = [canary.text for canary in FMT.enumerate()]
    old = separate_tokenisation_bits(model, tokenizer, FMT.prefix, [text[len(FMT.prefix) :] for text in texts])
    assert np.max(np.abs((old - old[0]) - (oracle - oracle[0]))) > 1e-2


def test_listed_secrets_agree_with_the_enumeration_and_across_calls(bpe_gpt2):
    model, tokenizer = bpe_gpt2
    scorer = HFCausalLMScorer(model, tokenizer, batch_size=7)
    everything = scorer.format_log_perplexities(FMT, reuse="tree")
    secrets = [(4, 2), (0, 0), (9, 9)]
    listed = scorer.format_log_perplexities(FMT, secrets=secrets, reuse="prefix")
    np.testing.assert_allclose(listed, everything[[42, 0, 99]], atol=1e-9, rtol=0)


def test_a_candidate_without_the_shared_prefix_falls_back_to_full_text(bpe_gpt2):
    """A format whose first hole merges into the prefix differently per symbol: "pin:" + word."""
    model, tokenizer = bpe_gpt2
    fmt = CanaryFormat("my pin is{words:1} now", vocabulary=("safe", " safe", "cat", " 7", "7"))
    texts = [canary.text for canary in fmt.enumerate()]
    oracle = full_text_bits(model, tokenizer, texts)
    scorer = HFCausalLMScorer(model, tokenizer)
    shared = scorer.format_prefix(fmt)
    starts = [tokenizer(text, add_special_tokens=False)["input_ids"][: len(shared)] == shared for text in texts]
    assert all(starts)  # P is what every probe shares
    for reuse in ("prefix", "tree"):
        scores = scorer.format_log_perplexities(fmt, reuse=reuse)
        np.testing.assert_allclose(scores - scores[0], oracle - oracle[0], atol=1e-6, rtol=0)


def test_the_tree_walk_runs_fewer_model_rows_than_one_per_candidate(bpe_gpt2):
    model, tokenizer = bpe_gpt2
    fmt = CanaryFormat("my pin is {digits:3}")
    tree, flat = HFCausalLMScorer(model, tokenizer, batch_size=64), HFCausalLMScorer(model, tokenizer, batch_size=64)
    a = tree.format_log_perplexities(fmt, reuse="tree")
    b = flat.format_log_perplexities(fmt, reuse="prefix")
    np.testing.assert_allclose(a, b, atol=1e-9, rtol=0)
    distinct_inner = {tuple(tokenizer(c.text, add_special_tokens=False)["input_ids"][:-1]) for c in fmt.enumerate()}
    assert tree.queries < flat.queries == 1 + fmt.space_size
    assert tree.queries <= 1 + len(distinct_inner) * 3  # at most one row per distinct token prefix


def test_extraction_paths_sum_to_the_full_text_score(bpe_gpt2):
    model, tokenizer = bpe_gpt2
    scorer = HFCausalLMScorer(model, tokenizer)
    everything = scorer.format_log_perplexities(FMT)
    brute = brute_force_search(scorer.extraction_scorer(FMT), [10, 10])
    assert brute.secret == list(itertools.product(range(10), range(10)))[int(np.argmin(everything))]
    assert brute.log_perplexity == pytest.approx(float(np.min(everything)), abs=1e-6)
    found = shortest_path_search(scorer.extraction_scorer(FMT), [10, 10], batch_size=8)
    assert found.log_perplexity == pytest.approx(float(everything[found.secret[0] * 10 + found.secret[1]]), abs=1e-6)


def test_scoring_leaves_the_models_mode_as_it_was(bpe_gpt2):
    model, tokenizer = bpe_gpt2
    model.train()
    try:
        HFCausalLMScorer(model, tokenizer).format_log_perplexities(FMT, secrets=[(1, 2)])
        assert model.training
    finally:
        model.eval()


def test_an_empty_or_unshared_prefix_is_refused(bpe_gpt2):
    model, tokenizer = bpe_gpt2
    scorer = HFCausalLMScorer(model, tokenizer)
    with pytest.raises(ValueError, match="`prefix` must not be empty"):
        scorer.format_log_perplexities(CanaryFormat("{digits:2} is my pin"))
    with pytest.raises(ValueError, match="`reuse` must be one of"):
        scorer.format_log_perplexities(FMT, reuse="cache")
