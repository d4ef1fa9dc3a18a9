"""The blind baseline of a text pool: word and character n-grams and lengths, never the model, tell the user's members from the rest.

The texts' counterpart of :func:`privaudit.audits.blind.blind_baseline`, after
Das, Zhang and Tramèr (arXiv:2406.16201), whose blind attacks are n-gram
classifiers: a logistic regression on TF-IDF word 1–2-grams, character 3–5-grams
(within word boundaries) and the standardised lengths in characters and words,
cross-validated in seeded folds; each fold's vocabulary is learnt on its training
part only. The out-of-fold scores give the same result object, flagged when the
exact per-fold rank test rejects a random split at 1%
(:func:`privaudit.audits.blind.split_p_value`); a flagged result names the
features with the largest weights of a model fitted on every text (which side
they point to).

>>> texts = [f"the {word} report of day {i}" for i, word in enumerate(["sales", "rains"] * 100)]
>>> members = np.array([i % 2 == 0 for i in range(200)])  # every member speaks of sales
>>> result = blind_text_baseline(texts, members, seed=0)
>>> result.flagged, any("sales" in name for name, _ in result.separating)
(True, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.extras import require
from .._core.validation import check_probability
from .blind import BLIND_CONFIDENCE, BLIND_FOLDS, BLIND_FPR, TOP_COLUMNS, BlindBaseline, baseline_from_scores, check_split, out_of_fold_scores

__all__ = ["TEXT_METHOD", "blind_text_baseline"]

TEXT_METHOD = (
    "logistic regression on TF-IDF word 1-2-grams, character 3-5-grams and the texts' lengths (scikit-learn), shuffled k-fold out-of-fold scores; "
    "flag: one-sided Mann-Whitney test of each held-out fold, Bonferroni over the folds"
)
_PURPOSE = "the blind baseline of a text pool (n-gram logistic regression)"
_LENGTHS = ("length in characters", "length in words")


def _lengths(texts: list[str]) -> np.ndarray:
    return np.array([[len(text), len(text.split())] for text in texts], dtype=np.float64)


def _fit(texts: list[str], member: np.ndarray, seed: int) -> tuple[Any, Any]:
    """(the fitted features, the fitted logistic regression) on ``texts``."""
    require("sklearn", purpose=_PURPOSE)
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion, make_pipeline
    from sklearn.preprocessing import FunctionTransformer, StandardScaler

    features = FeatureUnion(
        [
            ("words", TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True)),
            ("chars", TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True)),
            ("lengths", make_pipeline(FunctionTransformer(_lengths), StandardScaler())),
        ]
    )
    x = features.fit_transform(texts)
    return features, LogisticRegression(C=1.0, max_iter=1000, random_state=seed).fit(x, member)


def _separating(texts: list[str], member: np.ndarray, seed: int) -> tuple[tuple[str, float], ...]:
    """The features with the largest weights on every text, named with the side they point to (members or non-members)."""
    features, model = _fit(texts, member, seed)
    names = [*(f"word {name!r}" for name in features.transformer_list[0][1].get_feature_names_out()),
             *(f"characters {name!r}" for name in features.transformer_list[1][1].get_feature_names_out()), *_LENGTHS]  # fmt: skip
    weights = model.coef_[0]
    order = np.argsort(-np.abs(weights), kind="stable")[:TOP_COLUMNS]
    return tuple((f"{names[i]} ({'members' if weights[i] > 0 else 'non-members'})", float(abs(weights[i]))) for i in order)


def blind_text_baseline(
    texts: list[str], is_member: Any, *, folds: int = BLIND_FOLDS, seed: int = 0, confidence: float = BLIND_CONFIDENCE, fpr: float = BLIND_FPR
) -> BlindBaseline:
    """The blind baseline of a text pool: out-of-fold n-gram and length logistic regression, its AUC and TPR with intervals, what separates.

    ``separating`` holds (feature, |weight|) here, not an AUC lost: the
    weights of the logistic regression fitted on every text.
    """
    confidence = check_probability(confidence, "confidence")
    fpr = check_probability(fpr, "fpr")
    texts = [str(text) for text in texts]
    member, folds, seed = check_split(is_member, len(texts), folds, seed)

    def score_fold(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        features, model = _fit([texts[i] for i in train], member[train], seed)
        return model.predict_proba(features.transform([texts[i] for i in test]))[:, 1]

    scores, held_out = out_of_fold_scores(member, folds, seed, score_fold)
    return baseline_from_scores(
        scores, member, held_out, folds=folds, seed=seed, confidence=confidence, fpr=fpr, columns=("word n-grams", "character n-grams", *_LENGTHS),
        separating=lambda: _separating(texts, member, seed), method=TEXT_METHOD,
    )  # fmt: skip
