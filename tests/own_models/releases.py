"""Releases of one scikit-learn model, for the history's release story (``privaudit history``).

``release_private`` is a strongly regularised logistic regression: it cannot
fit a mislabeled canary. ``release_leaky`` is a fully grown decision tree:
it fits every training label, mislabeled canaries included.
"""

from __future__ import annotations

import numpy as np


def release_private(x_train: np.ndarray, y_train: np.ndarray, *, seed: int):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    return make_pipeline(StandardScaler(), LogisticRegression(C=1e-3, random_state=seed)).fit(x_train, y_train)


def release_leaky(x_train: np.ndarray, y_train: np.ndarray, *, seed: int):
    from sklearn.tree import DecisionTreeClassifier

    return DecisionTreeClassifier(random_state=seed).fit(x_train, y_train)
