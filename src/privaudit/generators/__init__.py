"""Generators of non-members for PANORAMIA: each is trained on D_G ⊂ D_f and samples fresh records.

A generator follows the :class:`Generator` protocol: ``fit(x, y, seed=...)``
on real training members, then ``sample(n, seed=...)`` returns ``(x, y)``
where ``y`` is None when the generator does not model labels (a labeller
then supplies them). Every sample passes :func:`check_generated` before the
audit uses it, so a generator that produces the wrong schema fails with a
clear error instead of a wrong number.

* :class:`~privaudit.generators.tabular.MSTGenerator`: MST-style graphical
  model (a maximum spanning tree of marginals, fitted with ``mbi``);
* :class:`~privaudit.generators.images.VAEGenerator`: a small VAE;
* :class:`~privaudit.generators.text.CharLMGenerator`: the Secret Sharer
  character LSTM, sampled at a fixed length with top-k and temperature.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

import numpy as np

__all__ = ["Generator", "check_generated"]


@runtime_checkable
class Generator(Protocol):
    """What PANORAMIA needs from a generator of records."""

    def fit(self, x: np.ndarray, y: np.ndarray, *, seed: int = 0) -> Generator:
        """Train on real members ``x`` (n, d) with labels ``y`` (n,)."""

    def sample(self, n: int, *, seed: int = 0) -> tuple[np.ndarray, np.ndarray | None]:
        """Draw ``n`` i.i.d. records: features (n, d), and labels (n,) or None."""


def check_generated(x, y, *, num_features: int, num_classes: int, n: int):
    """Check a generator's output against the real data's schema; return (x float64, y int64 or None).

    >>> x, y = check_generated(np.zeros((3, 2)), np.array([0, 1, 1]), num_features=2, num_classes=2, n=3)
    >>> x.shape, y.dtype.name
    ((3, 2), 'int64')
    >>> check_generated(np.zeros((3, 5)), None, num_features=2, num_classes=2, n=3)
    Traceback (most recent call last):
    ...
    ValueError: `generator` must produce 3 rows of 2 features, got shape (3, 5)
    """
    try:
        features = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as error:
        raise ValueError(f"`generator` must produce numeric features, got {type(x).__name__}") from error
    if features.shape != (n, num_features):
        raise ValueError(f"`generator` must produce {n} rows of {num_features} features, got shape {features.shape}")
    if not np.isfinite(features).all():
        raise ValueError("`generator` must produce finite features, got NaN or infinity")
    if y is None:
        return features, None
    labels = np.asarray(y)
    if labels.shape != (n,) or not np.isin(labels, np.arange(num_classes)).all():
        raise ValueError(f"`generator` must produce {n} labels in 0..{num_classes - 1}, got shape {labels.shape}")
    return features, labels.astype(np.int64)
