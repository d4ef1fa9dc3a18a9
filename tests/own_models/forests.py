"""User-style training functions of the scikit-learn models users ship: a random forest and an MLP without regularisation."""

from __future__ import annotations

import warnings


def train_forest(x_train, y_train, *, seed):
    """A random forest of 50 fully grown trees: its probabilities are votes, p = 1 for many of its members."""
    from sklearn.ensemble import RandomForestClassifier

    return RandomForestClassifier(n_estimators=50, random_state=seed, n_jobs=1).fit(x_train, y_train)


def train_mlp(x_train, y_train, *, seed):
    """scikit-learn's MLP, one hidden layer of 256, no weight decay, 200 epochs of Adam at 3e-3: it fits every label, mislabeled ones too."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.neural_network import MLPClassifier
    from threadpoolctl import threadpool_limits

    with warnings.catch_warnings(), threadpool_limits(1):
        warnings.simplefilter("ignore", ConvergenceWarning)
        return MLPClassifier(hidden_layer_sizes=(256,), alpha=0.0, max_iter=200, tol=1e-6, learning_rate_init=3e-3, random_state=seed).fit(x_train, y_train)
