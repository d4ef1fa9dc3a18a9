"""Membership signals of canaries in released synthetic text (Meeus et al., "The Canary's Echo", ICML 2025).

The auditor sees only the synthetic corpus. Two signals per canary, each
higher for "more likely included":

* :func:`ngram_log_likelihoods`: the canary's scored words (its secret
  given its prefix, or the whole text) under an add-one-smoothed word
  n-gram model fitted on the synthetic corpus;
* :func:`jaccard_similarities`: the largest Jaccard similarity between the
  canary's word n-gram set and any synthetic text's.

Words are whitespace-separated; the n-gram model pads each text with
``n - 1`` start markers; its vocabulary is the words of the corpus and of
the canaries, so every canary word has a probability.

How this follows Meeus et al. (and the data scorer of Microsoft's
``privacy-estimates``, their co-authors' code: NLTK's ``Laplace`` n-gram
model of the synthetic text, the sum of the log-probabilities of the
record's n-grams), and where it departs, each departure moving power, never
validity, since the one-run bound holds for any signal fixed before the
scores are seen:

* the same add-one (Laplace) word n-gram likelihood, summed in log space;
  ``n`` = 2 by default (the scorer uses 3; ``ngram_order`` sets it);
* words split on whitespace, not by NLTK's ``word_tokenize`` (no download
  at run time; punctuation stays on its word), and no end-of-text marker
  scored;
* the vocabulary holds every canary word (NLTK maps unseen words to one
  ``<UNK>``, so two unseen suffixes would score alike);
* the scored span is the provenance's: by default the secret given its
  prefix (Panda et al.'s strongest span); Meeus et al. score the whole
  record, ``span="text"``;
* the raw signal goes to the one-run bound: Meeus et al. calibrate it with
  reference models (RMIA), which a one-run audit does not train;
* the similarity signal is the largest Jaccard similarity, the top-1 of
  Meeus et al.'s mean over the k most similar synthetic records.

>>> synthetic = ["a b", "a c"]
>>> float(round(ngram_log_likelihoods(["a "], ["b"], synthetic, n=2)[0], 6))  # (1 + 1) / (2 + 3) for "b" after "a"
-0.916291
>>> jaccard_similarities(["a b"], synthetic, n=1).tolist()
[1.0]
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._core.conventions import Convention, default, explicit

__all__ = ["SIGNALS", "canary_echo_scores", "jaccard_similarities", "ngram_log_likelihoods", "read_synthetic_corpus", "signal_convention"]

SIGNALS = ("ngram", "jaccard")

_START = " "  # start marker: never a word, since words are split on whitespace


def read_synthetic_corpus(path, name: str = "--synthetic", *, what: str = "synthetic records") -> list[str]:
    """The non-empty lines of a UTF-8 text file of ``what``, one a line; an empty or binary file is refused, naming ``name``."""
    from .._core.files import check_utf8_file

    if not Path(path).is_file():
        raise ValueError(f"`{name}` must be an existing text file, got {str(path)!r}")
    check_utf8_file(path, name)
    text = Path(path).read_text(encoding="utf-8")
    if "\x00" in text:
        raise ValueError(f"`{name}`: {str(path)!r} holds NUL bytes: give a text file of {what}, one a line")
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        raise ValueError(f"`{name}`: {str(path)!r} is empty: give a text file of {what}, one a line")
    return lines


def _check_n(n: int) -> int:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"`n` must be an integer >= 1, got {n!r}")
    return n


def ngram_log_likelihoods(prefixes: Sequence[str], secrets: Sequence[str], synthetic: Sequence[str], *, n: int = 2, span: str = "secret") -> np.ndarray:
    """Natural-log likelihood of each canary's scored words under the add-one word n-gram model of ``synthetic``.

    ``span`` "secret" scores the secret's words given the prefix's; "text"
    every word of the text. A span without words (a secret of whitespace
    characters alone) scores as one word never seen: no evidence of an echo,
    where the empty sum, 0, would rank it above every echoed canary.
    """
    n = _check_n(n)
    if span not in ("secret", "text"):
        raise ValueError(f"`span` must be one of 'secret', 'text', got {span!r}")
    grams: Counter[tuple[str, ...]] = Counter()
    contexts: Counter[tuple[str, ...]] = Counter()
    vocabulary: set[str] = set()
    for text in synthetic:
        words = [_START] * (n - 1) + text.split()
        vocabulary.update(words[n - 1 :])
        for end in range(n - 1, len(words)):
            grams[tuple(words[end - n + 1 : end + 1])] += 1
            contexts[tuple(words[end - n + 1 : end])] += 1
    for prefix, secret in zip(prefixes, secrets, strict=True):
        vocabulary.update((prefix + secret).split())
    size = len(vocabulary)
    out = np.zeros(len(prefixes))
    for index, (prefix, secret) in enumerate(zip(prefixes, secrets, strict=True)):
        words = [_START] * (n - 1) + (prefix + secret).split()
        first = n - 1 + (len(prefix.split()) if span == "secret" else 0)
        if first >= len(words):  # no word to score (a secret of whitespace alone): no evidence of an echo, one unseen word's score
            out[index] = np.log(1 / size)
        for end in range(first, len(words)):
            gram = tuple(words[end - n + 1 : end + 1])
            out[index] += np.log((grams[gram] + 1) / (contexts[gram[:-1]] + size))
    return out


def _gram_set(text: str, n: int) -> set[tuple[str, ...]]:
    words = text.split()
    return {tuple(words[i : i + n]) for i in range(len(words) - n + 1)}


def jaccard_similarities(texts: Sequence[str], synthetic: Sequence[str], *, n: int = 1) -> np.ndarray:
    """For each text, the largest Jaccard similarity of its word n-gram set with a synthetic text's (0 when none shares one)."""
    n = _check_n(n)
    synthetic_sets = [_gram_set(text, n) for text in synthetic]
    out = np.zeros(len(texts))
    for index, text in enumerate(texts):
        mine = _gram_set(text, n)
        for other in synthetic_sets:
            union = len(mine | other)
            if union:
                out[index] = max(out[index], len(mine & other) / union)
    return out


def canary_echo_scores(
    prefixes: Sequence[str], secrets: Sequence[str], span: str, synthetic: Sequence[str], *, signal: str = "ngram", n: int = 2
) -> np.ndarray:
    """Each canary's membership signal against ``synthetic``: its scored span's n-gram log-likelihood ("ngram") or its whole text's best Jaccard match."""
    if signal == "ngram":
        return ngram_log_likelihoods(prefixes, secrets, synthetic, n=n, span=span)
    if signal == "jaccard":
        return jaccard_similarities([prefix + secret for prefix, secret in zip(prefixes, secrets, strict=True)], synthetic, n=n)
    raise ValueError(f"`synthetic_signal` must be one of {', '.join(map(repr, SIGNALS))}, got {signal!r}")


def signal_convention(signal: str, n: int) -> Convention:
    """The membership-signal convention: the bigram likelihood is the stated default; another signal or order is the user's explicit choice."""
    what = {
        "ngram": f"log-likelihood of the scored span under the add-one word {n}-gram model of the synthetic text",
        "jaccard": f"largest Jaccard similarity of the canary's word {n}-grams with a synthetic record's",
    }[signal]
    if (signal, n) == ("ngram", 2):
        return default("membership signal", what, "the one-run bound holds for any signal fixed before the scores are seen")
    return explicit("membership signal", what, "synthetic_signal and ngram_order")
