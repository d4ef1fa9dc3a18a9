"""``privaudit audit synthetic-text``: canaries echoed in text sampled from a really fine-tuned GPT-2, the embedded default's files, refused input."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

from privaudit.canaries import lm_synthetic
from privaudit.canaries.lm_provenance import LMProvenance

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]


def _tpr_at_1pct_fpr(scores, included):
    """Brute force over every threshold: the largest TPR whose FPR is at most 1%."""
    scores, included = np.asarray(scores), np.asarray(included, dtype=bool)
    inside, outside = scores[included], scores[~included]
    return max(np.mean(inside >= t) for t in np.r_[np.inf, scores] if np.mean(outside >= t) <= 0.01)


def _audit(synthetic, provenance, out, *options):
    """results.json of ``privaudit audit synthetic-text`` on the two files."""
    argv = ["audit", "synthetic-text", "--synthetic", synthetic, "--provenance", provenance, "--output", out, "--no-history", *options]
    code, _, err = run_cli(argv)
    assert code == 0, err
    return json.loads((out / "results.json").read_text())


def test_prefix_suffix_canaries_echo_in_text_sampled_from_a_fine_tuned_gpt2_above_random_token_canaries(tmp_path):
    """Per design, the embedded default: a tiny GPT-2 fine-tuned on privaudit's corpus with 64 canaries (half included, 8 copies), 800 records sampled from it.

    The prefix + high-perplexity suffix canaries' in-distribution prefixes are
    reached from the data's prompts and the memorised suffix follows; the
    random-token canaries ("my secret is ...") are not reached. Over seeds
    0-2 (benchmarks/lm_synthetic.py) the Jaccard signal's TPR at 1% FPR was
    0.85-0.96 for prefix + suffix against 0.12-0.25 for random tokens (about
    30 canaries a side: a standard error near 0.1 on the gap), so the gap of
    0.3 asserted is three standard errors inside the smallest seen (0.60);
    the n-gram signal's TPR at 1% FPR was 0.65-0.75 against 0.05-0.19, its
    AUC 0.71-0.83 against 0.48-0.60.
    """
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from privaudit.audits.synthetic_text.audit import AUDIT, tiny_synthetic_text

    seed = int(np.random.default_rng().integers(2**31))
    tpr = {}
    for design in ("prefix-suffix", "random-tokens"):
        provenances, synthetic = tiny_synthetic_text(dataclasses.replace(AUDIT.default_config(), seed=seed, design=design))
        (tmp_path / f"{design}.txt").write_text("\n".join(synthetic) + "\n", encoding="utf-8")
        provenances[design].write(tmp_path / f"{design}.json")
        data = _audit(tmp_path / f"{design}.txt", tmp_path / f"{design}.json", tmp_path / design, "--synthetic-signal", "jaccard")
        tpr[design] = _tpr_at_1pct_fpr(data["scores"], data["included"])
        assert data["tpr_at_1pct_fpr"] == pytest.approx(tpr[design]) and data["included"] == list(provenances[design].included)
    assert tpr["prefix-suffix"] - tpr["random-tokens"] >= 0.3, (seed, tpr)


def test_the_embedded_default_writes_the_text_and_provenance_it_scored(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from privaudit.audits.synthetic_text.audit import AUDIT
    from privaudit.report.runs import write_run

    config = dataclasses.replace(AUDIT.tiny_config(), seed=int(np.random.default_rng().integers(2**31)))
    run = AUDIT.run(config)
    write_run(tmp_path / "default", run)
    again = _audit(tmp_path / "default" / "synthetic.txt", tmp_path / "default" / "provenance.json", tmp_path / "again")
    assert again["scores"] == list(run.result.scores) and again["num_records"] == run.result.num_records == config.num_synthetic


@pytest.fixture()
def files(tmp_path):
    """A provenance of 40 word canaries (fair coins) and a synthetic corpus of words."""
    rng = np.random.default_rng()
    included = rng.random(40) < 0.5
    included[:2], included[2:4] = True, False
    record = LMProvenance(
        design="prefix-suffix",
        span="secret",
        prefixes=tuple(" ".join(rng.choice(WORDS, size=3)) + " " for _ in range(40)),
        secrets=tuple(f"w{int(i)}" for i in rng.integers(0, 10**6, size=40)),
        included=tuple(bool(value) for value in included),
        seed=0,
        inclusion_seed=0,
        tokenizer={"vocab_size": 1, "vocab_sha256": "0" * 64},
    )
    record.write(tmp_path / "provenance.json")
    (tmp_path / "synthetic.txt").write_text("alpha beta\ngamma w1\n")
    return tmp_path


@pytest.fixture()
def no_scoring(monkeypatch):
    """Scoring fails the test: refusals must come before it."""

    def fail(*_args, **_kwargs):
        raise AssertionError("a canary was scored before the input was refused")

    monkeypatch.setattr(lm_synthetic, "canary_echo_scores", fail)


@pytest.mark.parametrize(
    ("content", "extra", "match"),
    [
        (b"", [], "`--synthetic`: "),
        (b" \n\t\n", [], "is empty"),
        (b"\x89PNG\r\n\x1a\n\xff", [], "is not UTF-8 text"),
        (b"a record\x00\n", [], "holds NUL bytes"),
        (None, [], "`--synthetic` must be an existing text file"),
        (b"a record\n", ["--synthetic-signal", "cosine"], "`--synthetic-signal` must be one of 'ngram', 'jaccard'"),
        (b"a record\n", ["--ngram-order", "0"], "`--ngram-order` must be"),
        (b"a record\n", ["--delta", "1.5"], "`--delta` must be in (0, 1)"),
        (b"a record\n", ["--synthetic-signal", "model"], "`--synthetic-train` must be given with `--synthetic-signal` 'model'"),
        (
            b"a record\n",
            ["--synthetic-signal", "model", "--synthetic-train", "no_such_module:fn", "--canary-copies", "1"],
            "`--synthetic-train` 'no_such_module:fn': cannot import",
        ),
        (b"a record\n", [], "`--canary-copies` must be given (an integer >= 1)"),
        (
            b"a record\n",
            ["--synthetic-train", "test_lm_synthetic_text:train_on_synthetic"],
            "must be given with `--synthetic-signal` 'model', and only with it",
        ),
    ],
)
def test_bad_synthetic_text_or_option_is_refused_in_one_line_before_any_scoring(files, no_scoring, content, extra, match):
    if content is not None:
        (files / "bad.txt").write_bytes(content)
    argv = ["audit", "synthetic-text", "--synthetic", files / "bad.txt", "--provenance", files / "provenance.json", "--output", files / "out", "--no-history"]
    assert_refused(argv + extra, files / "out", match)


@pytest.mark.parametrize(
    ("given", "match"),
    [
        (["--synthetic", "synthetic.txt"], "`--synthetic` needs `--provenance`"),
        (["--provenance", "provenance.json"], "`--synthetic` and `--provenance` must be given together"),
        (["--synthetic", "synthetic.txt", "--provenance", "synthetic.txt"], "`--provenance`"),
    ],
)
def test_a_missing_or_wrong_provenance_is_refused_before_any_scoring(files, no_scoring, given, match):
    argv = ["audit", "synthetic-text", "--output", files / "out", "--no-history"] + [
        files / item if item.endswith((".txt", ".json")) else item for item in given
    ]
    assert_refused(argv, files / "out", match)


_TRAINED: dict = {}


def train_on_synthetic(texts, *, seed):
    """A user's --synthetic-train function: a tiny GPT-2 and BPE tokenizer fine-tuned on the synthetic records (kept for the test's oracle)."""
    from privaudit.audits.lm.tiny import bpe_tokenizer, fine_tune, tiny_gpt2

    tokenizer = bpe_tokenizer(texts, vocab_size=300)
    model = fine_tune(tiny_gpt2(tokenizer, seed=seed, n_embd=32), tokenizer, texts, steps=20, seed=seed, learning_rate=1e-2)
    _TRAINED["returned"] = (model, tokenizer)
    return model, tokenizer


def test_the_model_signal_scores_each_canary_by_the_users_model_fine_tuned_on_the_text(files):
    """Mitchell et al.'s audit of synthetic data: the user's function fine-tunes a model on the text; each score is the canary's span log-likelihood under it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    metrics = pytest.importorskip("sklearn.metrics")
    from test_lm_canaries import span_log_likelihoods

    record = LMProvenance.from_dict(json.loads((files / "provenance.json").read_text()))
    rng = np.random.default_rng()
    echoes = [text for text, keep in zip(record.texts, record.included, strict=True) if keep] * 3
    lines = [" ".join(rng.choice(WORDS, size=4)) for _ in range(30)] + echoes
    (files / "synthetic.txt").write_text("\n".join(lines) + "\n")
    argv = ["audit", "synthetic-text", "--synthetic", files / "synthetic.txt", "--provenance", files / "provenance.json", "--output", files / "out"]
    code, _, err = run_cli(
        argv + ["--no-history", "--synthetic-signal", "model", "--synthetic-train", "test_lm_synthetic_text:train_on_synthetic", "--canary-copies", "3"]
    )
    assert code == 0, err
    data = json.loads((files / "out" / "results.json").read_text())
    model, tokenizer = _TRAINED["returned"]
    expected = span_log_likelihoods(model, tokenizer, record.prefixes, record.secrets, "secret")  # a plain forward pass per canary
    np.testing.assert_allclose(data["scores"], expected, rtol=0, atol=1e-4)
    assert data["auc"] == pytest.approx(metrics.roc_auc_score(record.included, data["scores"]), abs=1e-12)
    assert [(item["name"], item["decided"]) for item in data["conventions"]] == [
        ("membership signal", "explicit"),
        ("special tokens", "checked"),
        ("scored span", "default"),
        ("canary copies", "explicit"),
    ]


def test_a_secret_without_words_scores_as_one_unseen_word_not_above_every_echo():
    synthetic = ["alpha beta", "alpha w7"]
    prefixes, secrets = ["alpha ", "alpha "], ["\x0c\x1e", "w7"]  # form feed and record separator are whitespace to str.split
    size = len({"alpha", "beta", "w7"})
    expected = [np.log(1 / size), np.log((1 + 1) / (2 + size))]  # add-one: "w7" follows "alpha" once of the context's 2
    np.testing.assert_allclose(lm_synthetic.ngram_log_likelihoods(prefixes, secrets, synthetic, n=2), expected, rtol=1e-12)
