"""A user's training function that logs every call, for the kill -9 resume test of ``privaudit audit mia --train``.

Each call appends ``seed rows`` to the file named by ``PRIVAUDIT_TEST_TRAIN_LOG``
(when set) and then waits ``PRIVAUDIT_TEST_TRAIN_DELAY`` seconds (default 0),
so a test can tell which models trained and can kill the run mid-way.
"""

from __future__ import annotations

import os
import time
import warnings

import numpy as np


def train_logged(x_train: np.ndarray, y_train: np.ndarray, *, seed: int):
    """Logistic regression on the rows given (deterministic for a seed), after logging the call."""
    from sklearn.exceptions import ConvergenceWarning
    from sklearn.linear_model import LogisticRegression

    log = os.environ.get("PRIVAUDIT_TEST_TRAIN_LOG")
    if log:
        with open(log, "a", encoding="utf-8") as file:
            file.write(f"{seed} {len(y_train)}\n")
    time.sleep(float(os.environ.get("PRIVAUDIT_TEST_TRAIN_DELAY", "0")))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return LogisticRegression(C=100.0, max_iter=50).fit(x_train, y_train)
