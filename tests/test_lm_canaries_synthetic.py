"""Membership signals of canaries in synthetic text: n-gram likelihoods and Jaccard similarities against brute force and scikit-learn; refused corpora."""

from __future__ import annotations

import numpy as np
import pytest

from privaudit.audits.lm.result import audit_lm_scores
from privaudit.canaries.lm_synthetic import jaccard_similarities, ngram_log_likelihoods, read_synthetic_corpus

WORDS = ["alpha", "beta", "gamma", "delta", "eps", "zeta"]


def _corpus(rng, count, low=2, high=7):
    return [" ".join(rng.choice(WORDS, size=int(rng.integers(low, high)))) for _ in range(count)]


def _brute_force(prefix, secret, synthetic, n, span, canaries):
    """Scan every position of every synthetic text for the gram and its context; add-one over the words of the corpus and of all the canaries."""
    vocabulary = {word for text in list(synthetic) + canaries for word in text.split()}
    words = (prefix + secret).split()
    start = len(prefix.split()) if span == "secret" else 0
    total = 0.0
    for position in range(start, len(words)):
        context = tuple(["<s>"] * max(0, n - 1 - position) + words[max(0, position - n + 1) : position])
        gram_count = context_count = 0
        for text in synthetic:
            padded = ["<s>"] * (n - 1) + text.split()
            for end in range(n - 1, len(padded)):
                if tuple(padded[end - n + 1 : end]) == context:
                    context_count += 1
                    gram_count += padded[end] == words[position]
        total += np.log((gram_count + 1) / (context_count + len(vocabulary)))
    return total


@pytest.mark.parametrize("n", [1, 2, 3])
@pytest.mark.parametrize("span", ["secret", "text"])
def test_ngram_likelihoods_equal_brute_force_counts(n, span):
    rng = np.random.default_rng()
    synthetic = _corpus(rng, 30)
    prefixes = [" ".join(rng.choice(WORDS, size=2)) + " " for _ in range(8)]
    secrets = [" ".join(rng.choice(WORDS + ["unseen"], size=3)) for _ in range(8)]
    canaries = [p + s for p, s in zip(prefixes, secrets, strict=True)]
    expected = [_brute_force(p, s, synthetic, n, span, canaries) for p, s in zip(prefixes, secrets, strict=True)]
    np.testing.assert_allclose(ngram_log_likelihoods(prefixes, secrets, synthetic, n=n, span=span), expected, rtol=1e-12)


def test_jaccard_similarities_equal_scikit_learns_best_match():
    metrics = pytest.importorskip("sklearn.metrics")
    rng = np.random.default_rng()
    synthetic, texts = _corpus(rng, 20), _corpus(rng, 10)

    def indicator(text):
        return np.array([word in text.split() for word in WORDS])

    expected = [max(metrics.jaccard_score(indicator(text), indicator(other)) for other in synthetic) for text in texts]
    np.testing.assert_allclose(jaccard_similarities(texts, synthetic, n=1), expected, rtol=1e-12)


def test_canaries_echoed_in_the_synthetic_text_are_detected_and_bounded():
    rng = np.random.default_rng()
    prefixes = [" ".join(rng.choice(WORDS, size=3)) + " " for _ in range(200)]
    secrets = [" ".join(f"w{int(i)}" for i in rng.integers(0, 10**6, size=3)) for _ in range(200)]  # high-perplexity suffixes
    included = np.arange(200) % 2 == 0
    echoes = [prefix + secret for prefix, secret, keep in zip(prefixes, secrets, included, strict=True) if keep]
    synthetic = _corpus(rng, 300) + echoes  # each included canary echoed once, as a generator that memorised it would
    scores = ngram_log_likelihoods(prefixes, secrets, synthetic, n=2)
    auc, tpr, bound = audit_lm_scores(scores, included, delta=1e-5, confidence=0.95)
    assert auc == 1.0 and tpr == 1.0 and bound.epsilon > 0.5


@pytest.mark.parametrize(
    ("content", "match"), [(b"", "is empty"), (b"\n  \n", "is empty"), (b"\x89PNG\r\n\x1a\n\x00\xff", "is not UTF-8 text"), (b"a\x00b\n", "NUL")]
)
def test_an_empty_or_binary_synthetic_corpus_is_refused(tmp_path, content, match):
    path = tmp_path / "synthetic.txt"
    path.write_bytes(content)
    with pytest.raises(ValueError, match=match) as error:
        read_synthetic_corpus(path)
    assert str(error.value).startswith("`--synthetic`")
    path.write_text("one record\n\nanother\n")
    assert read_synthetic_corpus(path) == ["one record", "another"]


@pytest.fixture()
def echoed(tmp_path):
    """A provenance of 60 word canaries (fair coins) and a synthetic corpus that echoes the included ones."""
    from privaudit.canaries.lm_provenance import LMProvenance

    rng = np.random.default_rng()
    included = rng.random(60) < 0.5
    included[:2], included[2:4] = True, False  # at least 2 on each side
    prefixes = tuple(" ".join(rng.choice(WORDS, size=3)) + " " for _ in range(60))
    secrets = tuple(" ".join(f"w{int(i)}" for i in rng.integers(0, 10**6, size=2)) for _ in range(60))
    record = LMProvenance(
        design="prefix-suffix",
        span="secret",
        prefixes=prefixes,
        secrets=secrets,
        included=tuple(bool(value) for value in included),
        seed=0,
        inclusion_seed=0,
        tokenizer={"vocab_size": 1, "vocab_sha256": "0" * 64},
    )
    record.write(tmp_path / "provenance.json")
    synthetic = _corpus(rng, 100) + [p + s for p, s, keep in zip(prefixes, secrets, included, strict=True) if keep]
    (tmp_path / "synthetic.txt").write_text("\n".join(synthetic) + "\n")
    return tmp_path, record, synthetic


def test_the_command_scores_the_canaries_echoes_in_the_synthetic_text(echoed):
    import json

    from cli_helpers import run_cli

    folder, record, synthetic = echoed
    out = folder / "run"
    code, _, err = run_cli(
        [
            "audit",
            "lm-one-run",
            "--synthetic",
            folder / "synthetic.txt",
            "--provenance",
            folder / "provenance.json",
            "--canary-copies",
            "1",
            "--output",
            out,
            "--no-history",
        ]
    )
    assert code == 0, err
    data = json.loads((out / "results.json").read_text())
    canaries = record.texts
    expected = [_brute_force(p, s, synthetic, 2, "secret", canaries) for p, s in zip(record.prefixes, record.secrets, strict=True)]
    np.testing.assert_allclose(data["scores"], expected, rtol=1e-12)
    assert data["auc"] == 1.0 and data["synthetic"] == str(folder / "synthetic.txt") and data["bound"]["epsilon"] > 0
    assert [item["name"] for item in data["conventions"]] == ["membership signal", "scored span", "canary copies"]


@pytest.mark.parametrize(
    ("content", "extra", "match"),
    [
        (b"", [], "is empty"),
        (b"\xff\xfe\x00binary", [], "is not UTF-8 text"),
        (b"a record\n", ["--model", "."], "`--synthetic` audits the released text alone"),
        (b"a record\n", ["--synthetic-signal", "cosine"], "`--synthetic-signal` must be one of 'ngram', 'jaccard'"),
    ],
)
def test_a_bad_synthetic_corpus_is_refused_in_one_line(echoed, content, extra, match):
    from cli_helpers import assert_refused

    folder, _, _ = echoed
    (folder / "bad.txt").write_bytes(content)
    argv = ["audit", "lm-one-run", "--synthetic", folder / "bad.txt", "--provenance", folder / "provenance.json", "--output", folder / "out", "--no-history"]
    assert_refused(argv + extra, folder / "out", match)
