"""LM canary designs: every score is the sum of its scored span's token log-likelihoods from the full text's tokenisation; provenance and refusals."""

from __future__ import annotations

import copy
import json
import re
import unicodedata

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
pytest.importorskip("tokenizers")

from rng_helpers import assert_same_rng_states, global_rng_states  # noqa: E402

from privaudit.audits.lm.scores import calibrated_scores, canary_log_likelihoods  # noqa: E402
from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2  # noqa: E402
from privaudit.canaries.lm import DESIGNS, expected_new_rows  # noqa: E402
from privaudit.canaries.lm_provenance import LMProvenance, check_tokenizer, prepare_lm_canaries, read_lm_provenance, tokenizer_identity  # noqa: E402
from privaudit.models.hf import HFCausalLMScorer  # noqa: E402

TEXTS = [
    "the quick brown fox jumps over the lazy dog",
    "a list comprehension builds a new list from an iterable",
    "the with statement wraps a block with methods of a context manager",
    "an assignment statement evaluates the expression list",
    "the for statement iterates over the elements of a sequence",
] * 8


@pytest.fixture(scope="module")
def base():
    """A tiny GPT-2 (float64, for exact sums) and a BPE tokenizer trained here, the model trained a few steps so its outputs are not uniform."""
    tokenizer = bpe_tokenizer(TEXTS, vocab_size=320)
    model = fine_tune(tiny_gpt2(tokenizer, seed=3, n_embd=32), tokenizer, TEXTS, steps=10, seed=4, learning_rate=1e-2).double()
    return model, tokenizer


def span_log_likelihoods(model, tokenizer, prefixes, secrets, span):
    """Oracle: one plain forward of each full text (tokenised whole), log_softmax, and the sum over the scored span's tokens.

    The span of "secret" starts after the longest run of the prefix's own tokens that the full text's tokens begin with; "text" from token 2.
    """
    out = []
    for prefix, secret in zip(prefixes, secrets, strict=True):
        ids = tokenizer(prefix + secret, add_special_tokens=False)["input_ids"]
        prefix_ids = tokenizer(prefix, add_special_tokens=False)["input_ids"]
        start = 1
        if span == "secret":
            start = 0
            while start < min(len(ids), len(prefix_ids)) and ids[start] == prefix_ids[start]:
                start += 1
        with torch.no_grad():
            log_p = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0].double(), dim=-1)
        out.append(sum(float(log_p[j - 1, ids[j]]) for j in range(max(start, 1), len(ids))))
    return np.array(out)


@pytest.mark.parametrize("design", DESIGNS)
@pytest.mark.parametrize("span", ["secret", "text"])
def test_every_score_is_the_sum_of_its_spans_token_log_likelihoods(base, design, span):
    model, tokenizer = base
    provenance, tuned, tokenizer = prepare_lm_canaries(design, tokenizer, count=6, seed=11, length=3, span=span, model=model, texts=TEXTS)
    tuned = tuned.double()
    scores = canary_log_likelihoods(HFCausalLMScorer(tuned, tokenizer), provenance)
    expected = span_log_likelihoods(tuned, tokenizer, provenance.prefixes, provenance.secrets, span)
    np.testing.assert_allclose(scores, expected, rtol=0, atol=1e-5)
    assert np.all(expected < 0)


def test_calibration_subtracts_the_base_models_log_likelihood_and_merges_across_the_boundary_are_scored(base):
    model, tokenizer = base
    provenance, _, _ = prepare_lm_canaries("random-tokens", tokenizer, count=24, seed=5, length=2)
    tuned = fine_tune(model, tokenizer, TEXTS + provenance.included_texts(), steps=5, seed=1).double()
    scores = calibrated_scores(HFCausalLMScorer(tuned, tokenizer), provenance, HFCausalLMScorer(model, tokenizer))
    args = (tokenizer, provenance.prefixes, provenance.secrets, "secret")
    np.testing.assert_allclose(scores, span_log_likelihoods(tuned, *args) - span_log_likelihoods(model, *args), rtol=0, atol=1e-5)
    # the prefix's trailing space merges into the secret's first token: the full text does not start with the prefix's tokens
    merged = [
        tokenizer(text, add_special_tokens=False)["input_ids"][: len(tokenizer(prefix, add_special_tokens=False)["input_ids"])]
        != tokenizer(prefix, add_special_tokens=False)["input_ids"]
        for prefix, text in zip(provenance.prefixes, provenance.texts, strict=True)
    ]
    assert any(merged)


def test_inclusion_is_a_fair_coin_of_the_recorded_seed_and_the_provenance_round_trips(base, tmp_path):
    _, tokenizer = base
    provenance, _, _ = prepare_lm_canaries("bigram", tokenizer, count=300, seed=9, length=2, texts=TEXTS)
    assert list(provenance.included) == (np.random.default_rng(provenance.inclusion_seed).random(300) < 0.5).tolist()
    assert 100 < sum(provenance.included) < 200  # a fair coin: P(outside) < 1e-7
    assert provenance.included_texts() == [t for t, keep in zip(provenance.texts, provenance.included, strict=True) if keep]
    provenance.write(tmp_path / "p.json")
    assert read_lm_provenance(tmp_path / "p.json") == provenance
    data = json.loads((tmp_path / "p.json").read_text())
    data["span"] = "everything"
    with pytest.raises(ValueError, match="span` must be one of 'secret', 'text'"):
        LMProvenance.from_dict(data)


def test_bigram_secrets_follow_the_datas_bigrams(base):
    _, tokenizer = base
    provenance, _, _ = prepare_lm_canaries("bigram", tokenizer, count=10, seed=2, length=4, texts=TEXTS)
    pairs = set()
    for text in TEXTS:
        ids = tokenizer(text, add_special_tokens=False)["input_ids"]
        pairs.update(zip(ids[:-1], ids[1:], strict=True))
    heads = {left for left, _ in pairs}
    for secret in provenance.secrets:  # a chain of the data's bigrams, restarting from the unigram after a token the data never continues
        ids = tokenizer(secret, add_special_tokens=False)["input_ids"]
        assert all(pair in pairs or pair[0] not in heads for pair in zip(ids[:-1], ids[1:], strict=True)), secret


def test_least_likely_tokens_are_the_base_models_least_likely_after_the_prefix(base):
    model, tokenizer = base
    provenance, _, _ = prepare_lm_canaries("least-likely", tokenizer, count=10, seed=2, length=1, model=model, prefix="the ")
    ids = tokenizer("the ", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        log_p = torch.log_softmax(model(input_ids=torch.tensor([ids])).logits[0, -1], dim=-1).numpy()

    # the usable tokens, found here by brute force: a token whose decoded text tokenises back to it alone and holds no control character or line break
    def printable(text):
        return all(unicodedata.category(char)[0] != "C" and unicodedata.category(char) not in ("Zl", "Zp") for char in text)

    usable = [
        i for i in range(len(tokenizer)) if tokenizer(tokenizer.decode([i]), add_special_tokens=False)["input_ids"] == [i] and printable(tokenizer.decode([i]))
    ]
    threshold = np.sort(log_p[usable])[63]  # the 64 least likely of them
    for secret in provenance.secrets:
        (token,) = tokenizer(secret, add_special_tokens=False)["input_ids"]
        assert token in usable and log_p[token] <= threshold


def test_new_tokens_resize_a_copy_save_it_and_leave_the_users_objects_and_rng(base, tmp_path):
    model, tokenizer = base
    vocab, weights = dict(tokenizer.get_vocab()), model.get_input_embeddings().weight.detach().clone()
    before = global_rng_states()
    provenance, resized, new_tokenizer = prepare_lm_canaries("new-tokens", tokenizer, count=8, seed=1, length=2, model=model, save_to=tmp_path / "m")
    assert_same_rng_states(before, global_rng_states())
    assert tokenizer.get_vocab() == vocab and torch.equal(model.get_input_embeddings().weight, weights)
    assert len(new_tokenizer) == len(tokenizer) + 24 == resized.get_input_embeddings().num_embeddings  # 8 canaries of a new-token prefix and 2 new tokens
    loaded = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "m")
    reloaded = transformers.AutoTokenizer.from_pretrained(tmp_path / "m")
    assert loaded.get_input_embeddings().num_embeddings == len(reloaded) and tokenizer_identity(reloaded) == provenance.tokenizer
    for secret in provenance.secrets:  # every secret is two of the new tokens
        assert set(reloaded.tokenize(secret)) <= set(provenance.new_tokens) and len(reloaded.tokenize(secret)) == 2


def _new_token_rows(tokenizer, provenance):
    """Each canary's token ids, from its full text tokenised whole (an independent reading of what the design drew)."""
    return [tokenizer(text, add_special_tokens=False)["input_ids"] for text in provenance.texts]


def test_each_new_token_is_in_one_canary_only_and_by_default_the_canary_starts_with_one(base):
    model, tokenizer = base
    provenance, _, new_tokenizer = prepare_lm_canaries("new-tokens", tokenizer, count=12, seed=5, length=2, model=model)
    new_ids = set(new_tokenizer.convert_tokens_to_ids(list(provenance.new_tokens)))
    rows = _new_token_rows(new_tokenizer, provenance)
    # a prefix of one new token and a secret of two, 36 distinct tokens in all: no two canaries share one
    assert all(len(row) == 3 and set(row) <= new_ids for row in rows)
    assert len({token for row in rows for token in row}) == 36 == len(new_ids)
    assert [new_tokenizer(prefix, add_special_tokens=False)["input_ids"] for prefix in provenance.prefixes] == [row[:1] for row in rows]
    shared, _, shared_tokenizer = prepare_lm_canaries("new-tokens", tokenizer, count=12, seed=5, length=2, model=model, prefix="my secret is ")
    secrets = [shared_tokenizer(secret, add_special_tokens=False)["input_ids"] for secret in shared.secrets]
    assert set(shared.prefixes) == {"my secret is "} and len({token for row in secrets for token in row}) == 24 == len(shared.new_tokens)


def test_a_canary_with_its_own_new_token_prefix_puts_more_of_its_gradient_on_rows_no_other_canary_reads(base):
    """Why new-token canaries have no shared prefix by default: a record's clipped gradient is split between the rows only its canary
    reads (what tells an included canary from an excluded one) and the weights every canary moves alike; the share of the first,
    from each canary's own backward pass, is several times larger with a prefix of its own than behind "my secret is "."""
    model, tokenizer = base

    own, shared = _private_share(model, tokenizer, None), _private_share(model, tokenizer, "my secret is ")
    assert own > 2 * shared and own > 0.3, (own, shared)


def test_new_rows_at_the_expected_output_row_put_the_whole_gradient_on_the_canarys_own_rows_and_leave_the_users_model(base):
    """At the base model's expected output row after the canary's context, the loss's gradient through the hidden state cancels: the
    share of the canary's own rows in its gradient norm goes from transformers' mean start to nearly 1 (the same backward passes)."""
    model, tokenizer = base
    weights = {name: value.clone() for name, value in model.state_dict().items()}
    mean, expected = _private_share(model, tokenizer, None), _private_share(model, tokenizer, None, new_rows="expected")
    assert mean < 0.9 and expected > 0.99, (mean, expected)  # what is left: p_j h on every other token's output row, p_j small
    assert all(torch.equal(weights[name], value) for name, value in model.state_dict().items())
    provenance, resized, new_tokenizer = prepare_lm_canaries("new-tokens", tokenizer, count=6, seed=2, length=1, model=model, new_rows="expected")
    assert provenance.settings["new_rows"] == "expected" and provenance.settings["new_rows_last_change"] < 1e-7
    context = provenance.settings["new_rows_context"]  # the first canary's own new token, as tokenizer(text) gives it (this BPE adds no BOS)
    assert context == new_tokenizer(provenance.prefixes[0])["input_ids"] and len(context) == 1 and context[0] >= len(tokenizer)
    rows = resized.get_output_embeddings().weight[len(tokenizer) :]
    assert torch.equal(rows, rows[:1].expand_as(rows))  # one start for every new token: no canary's row differs before training


def test_the_expected_rows_of_a_model_in_train_mode_are_those_of_eval_mode_and_leave_the_global_rng_and_its_mode():
    config = transformers.GPT2Config(vocab_size=12, n_embd=8, n_layer=1, n_head=2, n_positions=8, resid_pdrop=0.5, embd_pdrop=0.5, attn_pdrop=0.5)
    torch.manual_seed(0)
    training = transformers.GPT2LMHeadModel(config).train()
    evaluating = copy.deepcopy(training).eval()
    before = global_rng_states()
    assert expected_new_rows(training, [10, 11], [3, 10]) < 1e-7 and training.training  # dropout off inside, the mode restored
    assert_same_rng_states(before, global_rng_states())
    expected_new_rows(evaluating, [10, 11], [3, 10])
    assert torch.equal(training.lm_head.weight, evaluating.lm_head.weight)


def _private_share(model, tokenizer, prefix, new_rows="mean"):
    """The mean share of each new-token canary's own (tied) rows in the norm of its loss's gradient, from its own backward pass."""
    provenance, resized, new_tokenizer = prepare_lm_canaries("new-tokens", tokenizer, count=6, seed=2, length=1, model=model, prefix=prefix, new_rows=new_rows)
    new_ids = set(new_tokenizer.convert_tokens_to_ids(list(provenance.new_tokens)))
    shares = []
    for row in _new_token_rows(new_tokenizer, provenance):
        resized.zero_grad()
        ids = torch.tensor([row])
        resized(input_ids=ids, labels=ids).loss.backward()  # the mean next-token loss of the text: one record's loss
        total = torch.sqrt(sum((p.grad**2).sum() for p in resized.parameters() if p.grad is not None))
        own = resized.get_input_embeddings().weight.grad[sorted(set(row) & new_ids)].norm()  # tied input and output rows
        shares.append(float(own / total))
    return np.mean(shares)


def test_a_tokenizer_without_the_new_tokens_or_of_another_vocabulary_is_refused(base):
    model, tokenizer = base
    provenance, _, new_tokenizer = prepare_lm_canaries("new-tokens", tokenizer, count=4, seed=1, length=1, model=model)
    check_tokenizer(provenance, new_tokenizer)
    with pytest.raises(ValueError, match="lacks 8 of the canaries' 8 new tokens .* vocabulary was not resized"):
        check_tokenizer(provenance, tokenizer)
    other = bpe_tokenizer(TEXTS, vocab_size=300)
    plain, _, _ = prepare_lm_canaries("random-tokens", tokenizer, count=4, seed=1)
    with pytest.raises(ValueError, match="tokenizer is not the provenance's: 300 tokens"):
        check_tokenizer(plain, other)


@pytest.mark.parametrize(
    ("design", "kwargs", "match"),
    [
        ("glitter", {}, "`design` must be one of 'random-tokens', 'new-tokens'"),
        ("random-tokens", {"span": "all"}, "`span` must be one of 'secret', 'text'"),
        ("random-tokens", {"count": 3}, "`count` must be an integer in [4, inf)"),
        ("least-likely", {}, "`model` (the base model) is needed by design 'least-likely'"),
        ("new-tokens", {}, "`model` (the base model) is needed by design 'new-tokens'"),
        ("bigram", {}, "`texts` (the fine-tuning data) are needed by design 'bigram'"),
        ("prefix-suffix", {}, "`texts` (the fine-tuning data) are needed by design 'prefix-suffix'"),
        ("random-tokens", {"new_rows": "zero"}, "`new_rows` must be one of 'mean', 'expected'"),
        ("random-tokens", {"new_rows": "expected"}, "`new_rows` 'expected' starts the rows of new tokens: it needs design 'new-tokens'"),
    ],
)
def test_bad_arguments_are_refused_naming_the_argument(base, design, kwargs, match):
    _, tokenizer = base
    with pytest.raises(ValueError, match=re.escape(match)):
        prepare_lm_canaries(design, tokenizer, **({"count": 8, "seed": 0} | kwargs))


def test_secrets_draw_from_printable_tokens_only_so_a_canary_stays_one_line():
    from privaudit.canaries.lm import ordinary_token_ids, random_token_secrets, secret_from_ids, usable_token_ids

    texts = ["tab\tseparated\x0cform feed", "line one\nline two\r\nthree", "plain words here and there"] * 10
    tokenizer = bpe_tokenizer(texts, vocab_size=300)
    usable = set(usable_token_ids(tokenizer))
    for token in ordinary_token_ids(tokenizer):  # brute force over the vocabulary
        text = secret_from_ids(tokenizer, [token])
        printable = text.isprintable() or (text.strip(" ") == "" and text != "")  # str.isprintable refuses nothing but C*, Z* other than space
        round_trips = tokenizer(text, add_special_tokens=False)["input_ids"] == [token]
        assert (token in usable) == (round_trips and printable and not any(c in text for c in "\u2028\u2029")), repr(text)
    assert any("\n" in secret_from_ids(tokenizer, [token]) for token in ordinary_token_ids(tokenizer))  # the vocabulary has a line break to leave out
    secrets = random_token_secrets(tokenizer, 200, 3, rng=0)
    assert all(len(secret.splitlines()) <= 1 and secret.isprintable() for secret in secrets)
