"""The blind baseline of an image pool: a small embedding of the pixels and the images' statistics, never the model, tell the user's members from the rest.

The images' counterpart of :func:`privaudit.audits.blind.blind_baseline`.
Trees on raw pixels see one pixel at a time, and an image shift (brighter
photos, another camera, a centred subject) lives in many pixels at once. So
each image becomes a short vector: its first :data:`COMPONENTS` principal
components (the PCA fitted on each fold's training part only, so a held-out
image never shapes its own features), its per-channel mean and standard
deviation, and its label as a category. Gradient-boosted trees on that vector
are cross-validated in the same seeded folds, and the same exact per-fold
rank test flags the split (:func:`privaudit.audits.blind.split_p_value`). A
flagged result names the statistics or components whose AUC on every image
is furthest from ½ (descriptive: which way the sets differ).

>>> rng = np.random.default_rng(0)
>>> images = rng.random((300, 1, 8, 8))
>>> members = np.arange(300) < 150
>>> images[members] += 0.1  # members are brighter
>>> result = blind_image_baseline(images.reshape(300, -1), np.zeros(300, int), members, image_shape=(1, 8, 8), seed=0)
>>> result.flagged, result.separating[0][0].startswith("mean of channel 0")
(True, True)
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._core.extras import require
from .._core.validation import check_probability
from ..stats.metrics import roc_auc
from .blind import _MAX_CATEGORIES, BLIND_CONFIDENCE, BLIND_FOLDS, BLIND_FPR, TOP_COLUMNS, BlindBaseline, baseline_from_scores, check_split, out_of_fold_scores

__all__ = ["COMPONENTS", "IMAGE_METHOD", "blind_image_baseline"]

COMPONENTS = 16
IMAGE_METHOD = (
    f"gradient-boosted trees (scikit-learn) on the first {COMPONENTS} principal components of the pixels (fitted per fold), each channel's mean and "
    "standard deviation, and the label; shuffled k-fold out-of-fold scores; flag: one-sided Mann-Whitney test of each held-out fold, Bonferroni over the folds"
)
_PURPOSE = "the blind baseline of an image pool (a pixel embedding and gradient-boosted trees)"


def _statistics(x: np.ndarray, image_shape: tuple[int, int, int]) -> tuple[np.ndarray, list[str]]:
    channels = x.reshape(len(x), image_shape[0], -1)
    names = [f"mean of channel {c}" for c in range(image_shape[0])] + [f"standard deviation of channel {c}" for c in range(image_shape[0])]
    return np.column_stack([channels.mean(axis=2), channels.std(axis=2)]), names


def _features(pca: Any, x: np.ndarray, labels: np.ndarray, image_shape: tuple[int, int, int]) -> np.ndarray:
    statistics, _ = _statistics(x, image_shape)
    return np.column_stack([pca.transform(x), statistics, labels])


def _separating(x: np.ndarray, labels: np.ndarray, member: np.ndarray, image_shape: tuple[int, int, int]) -> tuple[tuple[str, float], ...]:
    """The statistics and components (PCA on every image) whose AUC is furthest from ½, with the side they point to."""
    from sklearn.decomposition import PCA

    statistics, names = _statistics(x, image_shape)
    components = PCA(n_components=min(COMPONENTS, len(x) - 1, x.shape[1]), random_state=0).fit_transform(x)
    values = np.column_stack([statistics, components])
    names = names + [f"principal component {k + 1} of the pixels" for k in range(components.shape[1])]
    aucs = np.array([roc_auc(column[member], column[~member]) for column in values.T])
    order = np.argsort(-np.abs(aucs - 0.5), kind="stable")[:TOP_COLUMNS]
    return tuple((f"{names[i]} ({'members' if aucs[i] > 0.5 else 'non-members'} higher)", float(abs(aucs[i] - 0.5))) for i in order)


def blind_image_baseline(
    x: Any,
    labels: Any,
    is_member: Any,
    *,
    image_shape: tuple[int, int, int],
    folds: int = BLIND_FOLDS,
    seed: int = 0,
    confidence: float = BLIND_CONFIDENCE,
    fpr: float = BLIND_FPR,
) -> BlindBaseline:
    """The blind baseline of an image pool: ``x`` (n, C·H·W) flattened images of ``image_shape``, their class ``labels``, the user's ``is_member``.

    ``separating`` holds (feature, |AUC − ½|) on every image, not an AUC lost.
    """
    require("sklearn", purpose=_PURPOSE)
    from sklearn.decomposition import PCA
    from sklearn.ensemble import HistGradientBoostingClassifier

    confidence = check_probability(confidence, "confidence")
    fpr = check_probability(fpr, "fpr")
    x = np.asarray(x, dtype=np.float64).reshape(len(x), -1)
    labels = np.unique(np.asarray(labels), return_inverse=True)[1].astype(np.float64)
    if int(np.prod(image_shape)) != x.shape[1]:
        raise ValueError(f"`image_shape` (--image-shape) {tuple(image_shape)} must hold as many values as each image's {x.shape[1]} pixels")
    member, folds, seed = check_split(is_member, len(x), folds, seed)
    # the label is a category, where the trees can hold it as one; more classes than that are split on their sorted codes
    categorical = np.r_[np.zeros(COMPONENTS + 2 * image_shape[0], bool), np.unique(labels).size <= _MAX_CATEGORIES]

    def score_fold(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        pca = PCA(n_components=min(COMPONENTS, train.size - 1, x.shape[1]), random_state=seed).fit(x[train])  # the held-out images never shape it
        used = np.r_[np.ones(pca.n_components_, bool), np.zeros(COMPONENTS - pca.n_components_, bool), np.ones(2 * image_shape[0] + 1, bool)]
        model = HistGradientBoostingClassifier(categorical_features=categorical[used], random_state=seed)
        model.fit(_features(pca, x[train], labels[train], image_shape), member[train])
        return model.predict_proba(_features(pca, x[test], labels[test], image_shape))[:, 1]

    scores, held_out = out_of_fold_scores(member, folds, seed, score_fold)
    return baseline_from_scores(
        scores, member, held_out, folds=folds, seed=seed, confidence=confidence, fpr=fpr,
        columns=(f"{COMPONENTS} principal components of the pixels", "each channel's mean and standard deviation", "label"),
        separating=lambda: _separating(x, labels, member, image_shape), method=IMAGE_METHOD,
    )  # fmt: skip
