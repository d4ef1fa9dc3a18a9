"""Dataset inference under a causal LM: its features against brute force, a fine-tuned tiny GPT-2's suspect set found, same-source splits not, a shifted validation set named."""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest
from scipy import stats

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("tokenizers")
pytest.importorskip("sklearn")

from privaudit.audits.lm.dataset_inference import FEATURES, MIN_K, lm_dataset_inference, text_features  # noqa: E402
from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2  # noqa: E402
from privaudit.data.corpus import load_default_corpus  # noqa: E402
from privaudit.models.hf import HFCausalLMScorer  # noqa: E402

NULL_SPLITS, NULL_SIZE = 20, 40


@pytest.fixture(scope="module")
def setting():
    """Corpus lines that fit the context: a base model on 3,000 of them, a target fine-tuned on 200 suspect lines among 300 others; the rest never seen."""
    lines = [line for line in load_default_corpus(max_chars=400_000) if 30 <= len(line) <= 90]
    order = np.random.default_rng(0).permutation(len(lines))
    general = [lines[i] for i in order[:3000]]
    tokenizer = bpe_tokenizer(general, vocab_size=512)
    unseen = [lines[i] for i in order[3000:] if len(tokenizer(lines[i], add_special_tokens=False)["input_ids"]) <= 62]
    base = fine_tune(tiny_gpt2(tokenizer, seed=0), tokenizer, general, steps=300, seed=0)
    suspect, validation, never = unseen[:200], unseen[200:400], unseen[400 : 400 + 2 * NULL_SPLITS * NULL_SIZE]
    target = fine_tune(base, tokenizer, suspect + general[:300], steps=36, seed=1)  # about 1.5 epochs of the suspect lines
    return tokenizer, base, target, suspect, validation, never


def test_token_log_probabilities_are_a_forward_pass_indexed_by_hand(setting):
    tokenizer, _, target, suspect, _, _ = setting
    scorer = HFCausalLMScorer(target, tokenizer, bos="none")
    texts = suspect[:3]
    for text, values in zip(texts, scorer.token_log_probs(texts), strict=True):
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        with torch.no_grad():
            logits = target(torch.tensor([ids])).logits[0].double()
        by_hand = [float(logits[t - 1][ids[t]] - torch.logsumexp(logits[t - 1], dim=0)) for t in range(1, len(ids))]
        np.testing.assert_allclose(values, by_hand, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose([-v.sum() / math.log(2) for v in scorer.token_log_probs(texts)], scorer.log_perplexity(texts), rtol=1e-12)


def test_text_features_follow_their_definitions():
    values = np.log(np.array([0.5, 0.1, 0.9, 0.2, 0.3, 0.05, 0.6, 0.7, 0.8, 0.4]))
    row = text_features([values], ["some text"])[0]
    ordered = np.sort(values)
    assert row[0] == pytest.approx(values.mean()) and row[1] == pytest.approx(values.sum())
    assert row[2] == pytest.approx(values.sum() / len(zlib.compress(b"some text")))
    for index, share in enumerate(MIN_K):
        assert row[3 + index] == pytest.approx(ordered[: max(1, math.ceil(share * 10))].mean())
    assert row[3 + len(MIN_K)] == pytest.approx(ordered[-1])  # Max-10% of 10 tokens: the highest
    assert len(row) == len(FEATURES) - 1  # the lowercased feature needs the model


@pytest.mark.parametrize("with_reference", [False, True])
def test_the_suspect_set_of_a_fine_tuned_tiny_gpt2_is_found(setting, with_reference):
    tokenizer, base, target, suspect, validation, _ = setting
    before = [p.detach().clone() for p in target.parameters()]
    target.train()
    result = lm_dataset_inference(target, tokenizer, suspect, validation, reference_model=base if with_reference else None, seed=3)
    assert result.found and result.test.p_value < 0.01 and result.test.mean_difference > 0
    assert result.blind_baseline.auc_low <= 0.6  # drawn alike: the texts alone tell the sets apart barely if at all
    assert len(result.test.weights) == len(result.features) == len(FEATURES) + (2 if with_reference else 0)
    assert "found used in training" in result.sentence()
    assert target.training and all(torch.equal(a, b) for a, b in zip(before, target.parameters(), strict=True))  # the user's model as it was


def test_independent_same_source_splits_are_found_at_most_at_the_level(setting):
    """20 disjoint pairs of lines the target never saw: rejections at 5% stay within the binomial allowance (1e-3) of 20 draws."""
    tokenizer, base, target, _, _, never = setting
    p_values = []
    for split in range(NULL_SPLITS):
        rows = never[2 * split * NULL_SIZE : 2 * (split + 1) * NULL_SIZE]
        result = lm_dataset_inference(
            target, tokenizer, rows[:NULL_SIZE], rows[NULL_SIZE:], reference_model=base, seed=split, blind=False, num_permutations=999
        )
        p_values.append(result.test.p_value)
    assert sum(p <= 0.05 for p in p_values) <= stats.binom.isf(1e-3, NULL_SPLITS, 0.05)
    assert stats.kstest(p_values, "uniform", alternative="greater").pvalue > 1e-3  # and no drift toward small p below the 5% line
    assert max(p_values) > 0.3  # not a test that finds everything


def test_a_validation_set_from_another_source_is_named_by_the_blind_baseline(setting):
    tokenizer, _, target, suspect, _, _ = setting
    other = [f"invoice {i}: {i * 7 % 13} boxes of item {i % 9} shipped" for i in range(200)]  # another source entirely
    result = lm_dataset_inference(target, tokenizer, suspect, other, seed=0, num_permutations=999)
    assert result.blind_baseline.flagged and "told apart without the model" in result.warning()


def test_bad_input_is_refused_with_the_argument_named(setting):
    tokenizer, base, target, suspect, validation, _ = setting
    with pytest.raises(ValueError, match="`suspect` must hold at least 8 non-empty texts"):
        lm_dataset_inference(target, tokenizer, suspect[:5], validation)
    with pytest.raises(ValueError, match="`validation` must hold texts that fit the model's context of 64 tokens"):
        lm_dataset_inference(target, tokenizer, suspect, validation[:20] + [" ".join(validation[:5])], blind=False)
    other = tiny_gpt2(bpe_tokenizer(suspect, vocab_size=300), seed=0)
    with pytest.raises(ValueError, match="`reference_model` must share the model's tokenizer"):
        lm_dataset_inference(target, tokenizer, suspect, validation, reference_model=other, blind=False)
    with pytest.raises(ValueError, match="`alpha` must be in"):
        lm_dataset_inference(target, tokenizer, suspect, validation, alpha=0.0)


def test_eight_texts_a_side_say_that_the_test_cannot_reach_a_strict_level(setting):
    """4 held-out texts a side: 70 arrangements, enumerated; the smallest p is 1/70, above a 1% level, and the sentence says so."""
    tokenizer, _, target, suspect, validation, _ = setting
    result = lm_dataset_inference(target, tokenizer, suspect[:8], validation[:8], alpha=0.01, blind=False)
    assert result.test.exact and result.test.num_permutations == 70 and not result.found
    assert "too few texts: the smallest p this test can give is 0.014, above 0.01" in result.sentence()


class _Scorer:
    """A stand-in scorer: one token per character, each of log-probability -1 for upper case and -2 for lower case."""

    def token_ids(self, text):
        return list(range(len(text)))

    context_limit = None

    def token_log_probs(self, texts):
        return [np.array([-1.0 if ch.isupper() else -2.0 for ch in text[1:]]) for text in texts]


def test_the_lowercased_feature_is_the_difference_of_means_and_zero_where_nothing_is_left_to_score():
    from privaudit.audits.lm.dataset_inference import _lowercased_less_original

    texts = ["ABC", "Ab"]
    means = np.array([-1.0, -2.0])  # the originals' means as _Scorer scores them
    assert _lowercased_less_original(_Scorer(), texts, means, "suspect").tolist() == [-1.0, 0.0]
    assert _lowercased_less_original(_Scorer(), ["A"], np.array([-1.0]), "suspect").tolist() == [0.0]  # one token: nothing to score
