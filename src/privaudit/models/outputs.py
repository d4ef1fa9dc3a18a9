"""What a classifier's outputs are (logits, probabilities or log-probabilities), checked on the outputs, and the losses they give.

A classifier may end in a linear layer (logits), a softmax (probabilities)
or a log-softmax (log-probabilities). Probabilities read as logits give a
wrong loss and no error, so the kind is checked on the model's own outputs
(:func:`output_kind`), or given by the user, and recorded as a
:class:`~privaudit._core.conventions.Convention`:

===================================================  =====================
every row                                            kind
===================================================  =====================
all values >= 0, summing to 1                        probabilities
all values <= 0, their exps summing to 1             log-probabilities
neither                                              logits
===================================================  =====================

Some rows of one kind and some not is refused: ``output`` (``--model-output``
on the command line) settles it. "Summing to 1" allows the rounding of the
precision the model computed in: 16 × classes × its machine epsilon (2e-6
for two float32 classes), far above a softmax's rounding and far below what
logits reach by chance.

Log-probabilities are logits whose log-sum-exp is 0, so reading them as
logits gives the same cross-entropy and the same logit-scaled confidence;
only probabilities need their own reading. Every score therefore goes one
stable way: the outputs become log-scores z (logits and log-probabilities
as they are, log p for probabilities), the loss is logsumexp(z) - z_y and
the logit-scaled confidence log(p_y / (1 - p_y)) is z_y - logsumexp of
the other classes' z, exact even when p_y rounds to 1.

>>> import numpy as np
>>> probabilities = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]], dtype=np.float32)
>>> output_kind(probabilities).describe()
'output kind: probabilities (checked: all 2 rows are >= 0 and sum to 1 (largest |sum - 1| 1.5e-08, tolerance 5.7e-06))'
>>> cross_entropy(probabilities, [0, 2], "probabilities").round(4).tolist()  # -log 0.7, -log 0.8
[0.3567, 0.2231]
>>> np.allclose(cross_entropy(np.log(probabilities), [0, 2], "logits"), cross_entropy(probabilities, [0, 2], "probabilities"))
True
>>> output_kind(np.array([[0.7, 0.3], [2.0, -1.0]]))
Traceback (most recent call last):
...
ValueError: `output`: 1 of 2 rows of the model's outputs are probabilities (>= 0, summing to 1) and 1 are not, so whether they are logits, probabilities or log-probabilities is ambiguous; give `output` ('logits', 'probabilities' or 'log-probabilities'; `--model-output` on the command line)
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy import special

from .._core.conventions import Convention, checked
from .._core.validation import check_choice

__all__ = ["OUTPUT_KINDS", "check_output_kind", "cross_entropy", "logit_confidence", "log_scores", "machine_epsilon", "output_kind", "output_tolerance"]

OUTPUT_KINDS = ("logits", "probabilities", "log-probabilities")
SETTLE = "give `output` ('logits', 'probabilities' or 'log-probabilities'; `--model-output` on the command line)"
#: The tolerance of a kind the user gave: rows further than this from a distribution would give a wrong loss.
GIVEN_TOLERANCE = 1e-4


def machine_epsilon(dtype: Any) -> float:
    """The machine epsilon of a numpy floating dtype; float64's for any other dtype.

    >>> machine_epsilon(np.float32), machine_epsilon(np.int64) == machine_epsilon(np.float64)
    (1.1920928955078125e-07, True)
    """
    kind = np.dtype(dtype)
    return float(np.finfo(kind if kind.kind == "f" else np.float64).eps)


def output_tolerance(classes: int, eps: float) -> float:
    """How far a row of probabilities may sum from 1 (or a row of log-probabilities' log-sum-exp from 0), in a precision of machine epsilon ``eps``.

    >>> round(output_tolerance(2, machine_epsilon(np.float32)), 7)
    3.8e-06
    """
    return 16.0 * classes * eps


def _as_outputs(outputs: Any) -> np.ndarray:
    values = np.asarray(outputs, dtype=np.float64)
    if values.ndim != 2 or values.shape[0] < 1 or values.shape[1] < 2:
        raise ValueError(f"the model's outputs must have shape (n, classes) with classes >= 2 (a score per class), got {values.shape}")
    bad = ~np.isfinite(values).all(axis=1)
    if bad.any():
        raise ValueError(f"the model's outputs must be finite, got nan or inf in {int(bad.sum())} of {values.shape[0]} rows")
    return values


def _row_gaps(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """|row sum - 1| where every value is >= 0 (else inf), and |logsumexp| where every value is <= 0 (else inf)."""
    probability_gap = np.where((values >= 0.0).all(axis=1), np.abs(values.sum(axis=1) - 1.0), np.inf)
    log_gap = np.where((values <= 0.0).all(axis=1), np.abs(special.logsumexp(values, axis=1)), np.inf)
    return probability_gap, log_gap


def output_kind(outputs: Any, *, eps: float | None = None) -> Convention:
    """The kind of a classifier's ``outputs`` (n, classes), checked row by row, as a checked Convention.

    ``eps`` is the machine epsilon of the precision the model computed in
    (default: that of ``outputs``' dtype); it sets the tolerance
    (:func:`output_tolerance`). Rows of several kinds are a ValueError
    naming ``output``, the option that settles it.
    """
    eps = machine_epsilon(np.asarray(outputs).dtype) if eps is None else eps
    values = _as_outputs(outputs)
    rows, classes = values.shape
    tolerance = output_tolerance(classes, eps)
    probability_gap, log_gap = _row_gaps(values)
    probabilities, logs = probability_gap <= tolerance, log_gap <= tolerance
    if probabilities.all():
        evidence = f"all {rows} rows are >= 0 and sum to 1 (largest |sum - 1| {probability_gap.max():.2g}, tolerance {tolerance:.2g})"
        return checked("output kind", "probabilities", evidence)
    if logs.all():
        evidence = (
            f"all {rows} rows are <= 0 and their exps sum to 1 (largest |logsumexp| {log_gap.max():.2g}, tolerance {tolerance:.2g}); "
            "read as logits they give the same losses"
        )
        return checked("output kind", "log-probabilities", evidence)
    for count, what in ((int(probabilities.sum()), "probabilities (>= 0, summing to 1)"), (int(logs.sum()), "log-probabilities (<= 0, exps summing to 1)")):
        if count:
            raise ValueError(
                f"`output`: {count} of {rows} rows of the model's outputs are {what} and {rows - count} are not, "
                f"so whether they are logits, probabilities or log-probabilities is ambiguous; {SETTLE}"
            )
    evidence = f"none of {rows} rows is a distribution: >= 0 summing to 1, or <= 0 with exps summing to 1 (tolerance {tolerance:.2g})"
    return checked("output kind", "logits", evidence)


def check_output_kind(outputs: Any, kind: str) -> np.ndarray:
    """``outputs`` as float64 (n, classes), checked to be what ``kind`` (given by the user) reads without a wrong loss.

    Logits can be any finite numbers; probabilities and log-probabilities
    must be distributions to within :data:`GIVEN_TOLERANCE`.
    """
    check_choice(kind, "output", OUTPUT_KINDS)
    values = _as_outputs(outputs)
    probability_gap, log_gap = _row_gaps(values)
    gap = {"probabilities": probability_gap, "log-probabilities": log_gap}.get(kind)
    if gap is not None and np.any(gap > GIVEN_TOLERANCE):
        rule = "rows >= 0 summing to 1" if kind == "probabilities" else "rows <= 0 whose exps sum to 1"
        bad = int((gap > GIVEN_TOLERANCE).sum())
        raise ValueError(f"the model's outputs are not {kind} ({rule}) in {bad} of {values.shape[0]} rows; give `output` 'logits' (`--model-output logits`)")
    return values


def log_scores(outputs: Any, kind: str) -> np.ndarray:
    """Log-scores z whose softmax is the model's distribution: logits and log-probabilities as they are, log p for probabilities.

    A probability of 0 (underflow in the model) becomes log of the smallest
    positive double, -708, so that its loss is large and finite.
    """
    values = check_output_kind(outputs, kind)
    if kind == "probabilities":
        return np.log(np.maximum(values, np.finfo(np.float64).tiny))
    return values


def _labels(labels: Any, outputs: np.ndarray) -> np.ndarray:
    labels = np.asarray(labels)
    if labels.shape != (outputs.shape[0],):
        raise ValueError(f"`y` must hold one label per example of the model's (n, classes) output {outputs.shape}, got shape {labels.shape}")
    if not np.issubdtype(labels.dtype, np.integer) or labels.min(initial=0) < 0 or labels.max(initial=0) >= outputs.shape[1]:
        raise ValueError(f"`y` must hold integer labels in [0, {outputs.shape[1] - 1}]")
    return labels


def cross_entropy(outputs: Any, labels: Any, kind: str) -> np.ndarray:
    """Per-example cross-entropy (nats), logsumexp(z) - z_y on the log-scores z of outputs of ``kind``."""
    z = log_scores(outputs, kind)
    labels = _labels(labels, z)
    return np.asarray(special.logsumexp(z, axis=1) - z[np.arange(labels.size), labels])


def logit_confidence(outputs: Any, labels: Any, kind: str) -> np.ndarray:
    """Per-example logit-scaled confidence log(p_y / (1 - p_y)) (Carlini et al.'s LiRA score), from the log-scores z.

    1 - p_y is the sum of the other classes' probabilities, taken as a
    log-sum-exp of their z: exact even when p_y rounds to 1.

    >>> logit_confidence(np.array([[0.0, 40.0]]), [1], "logits").round(6).tolist()  # p_y = 1 - 4e-18: log(p/(1-p)) = 40
    [40.0]
    """
    z = log_scores(outputs, kind)
    labels = _labels(labels, z)
    rows = np.arange(labels.size)
    others = z.copy()
    others[rows, labels] = -np.inf
    return np.asarray(z[rows, labels] - special.logsumexp(others, axis=1))
