"""The blind baseline: can the records alone, without the model, tell the user's members from the non-members?

When the user gives membership (``audit mia --model … --members``, a
synthetic-data holdout), an attack's numbers measure the model only if the
two sets are alike. If they differ by themselves (members drawn from one
time, place or range of a column), an attack that never looks at the model
tells them apart too: Das, Zhang and Tramèr, "Blind Baselines Beat
Membership Inference Attacks for Foundation Models" (arXiv:2406.16201).

:func:`blind_baseline` trains gradient-boosted trees (scikit-learn's
``HistGradientBoostingClassifier``; text columns as categories) to predict
membership from the records' columns, cross-validated in seeded folds, and
scores each record by the model that never saw it. The out-of-fold scores
give the AUC with its two-sided interval
(:func:`privaudit.stats.auc.auc_interval`) and the TPR at 1% FPR with its
Clopper–Pearson interval (:func:`privaudit.stats.mia_metrics.attack_metrics`),
the numbers shown. The flag rests on a test whose null is exact instead
(:func:`split_p_value`): the pooled out-of-fold scores are dependent, so the
AUC's interval is not. When the test rejects a random split at
1 - confidence (1%) the result is ``flagged``, and the columns that separate
the sets are named by permutation importance on the held-out folds: the AUC
lost when one column is shuffled within each fold. It changes no attack
number; the attacks are read beside it (:meth:`BlindBaseline.advantage`).

>>> rng = np.random.default_rng(0)
>>> age, town = rng.normal(50, 10, 400), rng.choice(["north", "south"], 400)
>>> members = rng.random(400) < np.where(age > 50, 0.8, 0.2)  # members mostly from the older half
>>> result = blind_baseline({"age": age, "town": town}, members, seed=0)
>>> result.flagged, result.separating[0][0]
(True, 'age')
>>> blind_baseline({"age": age, "town": town}, rng.random(400) < 0.5, seed=0).flagged  # a random split
False
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from .._core.extras import require
from .._core.seeding import check_seed
from .._core.validation import check_count, check_probability
from ..stats.auc import auc_interval
from ..stats.metrics import roc_auc
from ..stats.mia_metrics import attack_metrics, supported_fpr

__all__ = [
    "BLIND_CONFIDENCE",
    "BLIND_FOLDS",
    "BLIND_FPR",
    "BlindBaseline",
    "baseline_from_scores",
    "blind_baseline",
    "blind_scores",
    "check_split",
    "encode_columns",
    "fold_p_values",
    "one_class_scores",
    "shuffled_folds",
    "split_p_value",
]

#: The level of the blind baseline's intervals and of its test: a random split is flagged at most 1 time in 100 (the test rejects at 1 - confidence).
BLIND_CONFIDENCE = 0.99
#: Folds of the cross-validation (shuffled, not stratified): every record scored by trees trained on the other 80%.
BLIND_FOLDS = 5
#: The FPR at which the baseline's TPR is read, as the attacks' headline.
BLIND_FPR = 0.01
#: Columns named in the warning, at most.
TOP_COLUMNS = 3
#: Columns shuffled for the warning, at most: a wider table's are the most separating on their own (ties ranked in order).
MAX_SHUFFLED = 64
_MAX_CATEGORIES = 255  # HistGradientBoostingClassifier's limit; a text column with more is split on its sorted codes instead
METHOD = (
    "gradient-boosted trees (scikit-learn HistGradientBoostingClassifier) on the records' columns, shuffled k-fold out-of-fold scores; "
    "flag: one-sided Mann-Whitney test of each held-out fold, Bonferroni over the folds"
)


@dataclasses.dataclass(frozen=True)
class BlindBaseline:
    """How well a classifier that never sees the model tells members from non-members, out of fold.

    ``auc`` with its two-sided ``confidence`` interval [``auc_low``,
    ``auc_high``]; ``tpr`` at ``fpr`` with its Clopper–Pearson interval
    (None where the non-members are fewer than 1/``fpr``): descriptive
    numbers. ``p_value``: of the test that the split is random
    (:func:`split_p_value`; None in a result written before it existed).
    ``flagged``: ``p_value`` <= 1 - ``confidence``, the sets differ by themselves;
    ``separating`` then holds (column, AUC lost when it is shuffled) of the
    columns that separate them most. ``columns`` is every column it saw.
    """

    auc: float
    auc_low: float
    auc_high: float
    tpr: float | None
    tpr_low: float | None
    tpr_high: float | None
    fpr: float
    confidence: float
    folds: int
    seed: int
    num_in: int
    num_out: int
    flagged: bool
    columns: tuple[str, ...]
    separating: tuple[tuple[str, float], ...] = ()
    method: str = METHOD
    p_value: float | None = None

    def _rejection(self) -> str:
        """'random split rejected at 1%: p = …' (or 'not rejected'), the test the flag rests on."""
        if self.p_value is None:
            return "random split not tested (a result written before the test)"
        verb = "rejected" if self.flagged else "not rejected"
        return f"random split {verb} at {1 - self.confidence:.0%}: p = {self.p_value:.2g}"

    def warning(self) -> str | None:
        """The one warning of a flagged baseline (None when not flagged): what separates the sets, and what to do."""
        if not self.flagged:
            return None
        named = ", ".join(f"{name!r} (AUC -{drop:.3f} when shuffled)" for name, drop in self.separating) or "no single column (they separate together)"
        return (
            f"the members and non-members you gave differ by themselves ({self._rejection()}, an exact per-fold rank test): "
            f"a blind classifier that never sees the model tells them apart with AUC {self.auc:.3f} "
            f"({self.confidence:.0%} interval [{self.auc_low:.3f}, {self.auc_high:.3f}]); "
            f"the columns that separate them: {named}. The attacks' numbers measure this split as much as the model: read each as its "
            "advantage over the blind baseline, or draw the members at random (or audit with canaries) for numbers of the model alone"
        )

    def advantage(self, auc: float, tpr: float | None = None) -> tuple[float, float | None]:
        """(an attack's AUC minus the baseline's, its TPR at ``fpr`` minus the baseline's, None where either is missing).

        >>> base = BlindBaseline(0.6, 0.55, 0.65, 0.05, 0.01, 0.1, 0.01, 0.99, 5, 0, 100, 100, True, ("a",))
        >>> tuple(round(value, 3) for value in base.advantage(0.75, 0.2))
        (0.15, 0.15)
        """
        return auc - self.auc, None if tpr is None or self.tpr is None else tpr - self.tpr

    def describe(self) -> str:
        """One line: AUC and TPR with their intervals, and how it was cross-validated."""
        if self.tpr is None:
            tpr = f"n/a (needs >= {round(1 / self.fpr)} non-members, got {self.num_out})"
        else:
            tpr = f"{self.tpr:.4f} [{self.tpr_low:.4f}, {self.tpr_high:.4f}]"
        return (
            f"AUC {self.auc:.4f} [{self.auc_low:.4f}, {self.auc_high:.4f}], TPR at {self.fpr:.1%} FPR {tpr} "
            f"({self.confidence:.0%} intervals; {self.folds}-fold out-of-fold scores, seed {self.seed}, {self.num_in} members, {self.num_out} non-members); "
            f"{self._rejection()}"
        )


def encode_columns(table: Any) -> tuple[tuple[str, ...], np.ndarray, np.ndarray]:
    """(names, float matrix (n, d), categorical mask (d,)) of a table: numbers as they are, text as category codes; nothing is changed in ``table``.

    ``table`` is a pandas DataFrame or a mapping of names to 1-D arrays. A
    text column's categories are its sorted distinct values, missing cells
    (None, NaN) stay missing.

    >>> names, x, categorical = encode_columns({"age": [30, 40], "town": ["south", "north"]})
    >>> names, x.tolist(), categorical.tolist()
    (('age', 'town'), [[30.0, 1.0], [40.0, 0.0]], [False, True])
    """
    names = tuple(str(name) for name in (table.columns if hasattr(table, "columns") else table.keys()))
    columns, categorical = [], []
    for name, key in zip(names, table.columns if hasattr(table, "columns") else table.keys(), strict=True):
        values = np.asarray(table[key])
        if values.ndim != 1:
            raise ValueError(f"`table` column {name!r} must be 1-D, got shape {values.shape}")
        if values.dtype.kind in "biuf":
            columns.append(values.astype(np.float64))
            categorical.append(False)
            continue
        missing = np.array([value is None or (isinstance(value, float) and np.isnan(value)) for value in values], dtype=bool)
        text = np.where(missing, "", values.astype(str))
        levels, codes = np.unique(text[~missing], return_inverse=True)
        encoded = np.full(values.size, np.nan)
        encoded[~missing] = codes
        columns.append(encoded)
        categorical.append(levels.size <= _MAX_CATEGORIES)
    if not columns or len({column.size for column in columns}) != 1:
        raise ValueError(f"`table` must hold one or more columns of equal length, got {len(columns)} column(s)")
    return names, np.column_stack(columns), np.asarray(categorical, dtype=bool)


_PURPOSE = "the blind baseline of a membership you gave (gradient-boosted trees)"


def _classifier(categorical: np.ndarray, seed: int) -> Any:
    require("sklearn", purpose=_PURPOSE)
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=50, max_leaf_nodes=15, min_samples_leaf=20, l2_regularization=1.0, early_stopping=False, categorical_features=categorical, random_state=seed
    )


def blind_scores(table: Any, is_member: Any, *, folds: int = BLIND_FOLDS, seed: int = 0) -> np.ndarray:
    """Each record's out-of-fold score (the predicted probability it is a member, from trees that never saw it).

    >>> scores = blind_scores({"x": np.arange(100.0)}, np.arange(100) >= 50, seed=0)
    >>> round(roc_auc(scores[50:], scores[:50]), 2)
    1.0
    """
    return _cross_validated(*_checked(table, is_member, folds, seed))[0]


def check_split(is_member: Any, num_records: int, folds: int, seed: int) -> tuple[np.ndarray, int, int]:
    """(membership, folds, seed) checked: one boolean per record, at least ``folds`` on each side."""
    member = np.asarray(is_member)
    if member.dtype != bool or member.shape != (num_records,):
        raise ValueError(f"`is_member` must be {num_records} booleans, one per record, got shape {member.shape} of dtype {member.dtype}")
    folds = check_count(folds, "folds", minimum=2)
    if min(int(member.sum()), int((~member).sum())) < folds:
        raise ValueError(f"`is_member` must hold at least `folds` = {folds} members and non-members, got {int(member.sum())} of {member.size}")
    return member, folds, check_seed(seed)


def _checked(table: Any, is_member: Any, folds: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, int, int]:
    _, x, categorical = encode_columns(table)
    return (x, categorical, *check_split(is_member, x.shape[0], folds, seed))


def shuffled_folds(num_records: int, folds: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """(train rows, held-out rows) of each of ``folds`` folds of the records shuffled by ``seed`` (scikit-learn's KFold).

    Not stratified on purpose: the folds never look at the membership, so
    under a random split the labels of a held-out fold are, given everything
    outside it, a uniformly random arrangement of its records; the per-fold
    rank test is then exact (:func:`fold_p_values`). Stratified folds place
    each member by its rank among the members, so swapping two labels in a
    fold moves other records between folds, and that breaks.

    >>> [test.size for _, test in shuffled_folds(12, 5, seed=0)]
    [3, 3, 2, 2, 2]
    """
    require("sklearn", purpose=_PURPOSE)
    from sklearn.model_selection import KFold

    return list(KFold(n_splits=folds, shuffle=True, random_state=seed).split(np.zeros((num_records, 1))))


def one_class_scores(member: np.ndarray, size: int) -> np.ndarray | None:
    """The held-out scores where the training part holds one class only (its share, a constant: no classifier can be fit), else None."""
    share = float(member.mean())
    return np.full(size, share) if share in (0.0, 1.0) else None


def out_of_fold_scores(
    member: np.ndarray, folds: int, seed: int, score_fold: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> tuple[np.ndarray, list[np.ndarray]]:
    """(each record's score by a classifier that never saw it, each fold's held-out rows): ``score_fold(train rows, held-out rows)`` per shuffled fold."""
    scores = np.empty(member.size)
    split = shuffled_folds(member.size, folds, seed)
    for train, test in split:
        constant = one_class_scores(member[train], test.size)
        scores[test] = constant if constant is not None else score_fold(train, test)
    return scores, [test for _, test in split]


def _cross_validated(
    x: np.ndarray, categorical: np.ndarray, member: np.ndarray, folds: int, seed: int
) -> tuple[np.ndarray, list[np.ndarray], list[tuple[Any, np.ndarray]]]:
    """(out-of-fold scores, every fold's held-out rows, (trees, held-out rows) of each fold a classifier was fit on)."""
    fitted: list[tuple[Any, np.ndarray]] = []

    def score_fold(train: np.ndarray, test: np.ndarray) -> np.ndarray:
        model = _classifier(categorical, seed).fit(x[train], member[train])
        fitted.append((model, test))
        return model.predict_proba(x[test])[:, 1]

    scores, held_out = out_of_fold_scores(member, folds, seed, score_fold)
    return scores, held_out, fitted


def fold_p_values(scores: np.ndarray, member: np.ndarray, held_out: list[np.ndarray]) -> np.ndarray:
    """Each held-out fold's one-sided p-value that its members score no higher than its non-members (1 where it lacks either).

    Mann–Whitney's U of the fold's out-of-fold scores (scipy.stats.mannwhitneyu:
    exact without ties in small folds, else the normal approximation with the
    tie correction and continuity correction). Given the other folds the
    scores are fixed, and under a random split the fold's labels are a random
    arrangement (:func:`shuffled_folds`), which is U's null.

    >>> member = np.arange(20) % 2 == 0
    >>> fold_p_values(np.where(member, 1.0, 0.0) + np.arange(20) / 100, member, [np.arange(10), np.arange(10, 20)]).round(4).tolist()
    [0.004, 0.004]
    """
    from scipy.stats import mannwhitneyu

    values = []
    for test in held_out:
        inside, outside = scores[test][member[test]], scores[test][~member[test]]
        tied = inside.size == 0 or outside.size == 0 or np.ptp(scores[test]) == 0  # U at its mean, or undefined: no evidence
        values.append(1.0 if tied else float(mannwhitneyu(inside, outside, alternative="greater").pvalue))
    return np.asarray(values)


def split_p_value(fold_p: np.ndarray) -> float:
    """The p-value that the split is random from the folds' (Bonferroni: the folds' smallest times their number, at most 1).

    The folds' tests are dependent (they share training records); Bonferroni
    holds under any dependence: P(some fold's p <= level / folds) <= level.

    >>> split_p_value(np.array([0.3, 0.001, 0.5, 0.9, 0.2]))
    0.005
    """
    return float(min(1.0, fold_p.size * float(np.min(fold_p))))


def _candidates(x: np.ndarray, member: np.ndarray) -> np.ndarray:
    """The columns worth shuffling: all of a narrow table; of a wide one (an image's pixels), the MAX_SHUFFLED most separating on their own.

    A column's own separation is |AUC - ½| of its values (missing cells ranked first), one rank-sum per column.
    """
    if x.shape[1] <= MAX_SHUFFLED:
        return np.arange(x.shape[1])
    ranks = np.argsort(np.argsort(np.nan_to_num(x, nan=-np.inf), axis=0, kind="stable"), axis=0) + 1.0
    n_in, n_out = int(member.sum()), int((~member).sum())
    alone = np.abs((ranks[member].sum(axis=0) - n_in * (n_in + 1) / 2) / (n_in * n_out) - 0.5)
    return np.sort(np.argsort(-alone, kind="stable")[:MAX_SHUFFLED])


def _separating(
    x: np.ndarray, member: np.ndarray, scores: np.ndarray, fitted: list[tuple[Any, np.ndarray]], names: tuple[str, ...], seed: int
) -> tuple[tuple[str, float], ...]:
    """The columns whose shuffling within each held-out fold costs the out-of-fold AUC most (and costs it something), at most TOP_COLUMNS."""
    rng = np.random.default_rng(np.random.SeedSequence((seed, 0xB1D)))
    auc = roc_auc(scores[member], scores[~member])
    drops = np.full(x.shape[1], -np.inf)
    for column in _candidates(x, member):
        shuffled = scores.copy()
        for model, test in fitted:  # a fold whose training part held one class has no trees; its constant scores stay
            rows = x[test].copy()
            rows[:, column] = rows[rng.permutation(test.size), column]
            shuffled[test] = model.predict_proba(rows)[:, 1]
        drops[column] = auc - roc_auc(shuffled[member], shuffled[~member])
    order = np.argsort(-drops, kind="stable")
    return tuple((names[i], float(drops[i])) for i in order[:TOP_COLUMNS] if drops[i] > 0)


def blind_baseline(
    table: Any, is_member: Any, *, folds: int = BLIND_FOLDS, seed: int = 0, confidence: float = BLIND_CONFIDENCE, fpr: float = BLIND_FPR
) -> BlindBaseline:
    """The blind baseline of a membership split: out-of-fold trees on the records' columns, their AUC and TPR with intervals, and what separates.

    Parameters
    ----------
    table : pandas DataFrame or mapping of names to 1-D arrays
        The records as the attacks see them, one row each, without the
        membership and without ids (they are no record content); text
        columns are categories. Never changed.
    is_member : array of bool
        True for each record the user says the model was trained on.
    folds : int >= 2
        Folds of the records shuffled by ``seed`` (not stratified, see :func:`shuffled_folds`).
    confidence : float in (0, 1)
        Level of the two-sided intervals; the baseline is flagged when the
        test rejects a random split at 1 - ``confidence``.
    fpr : float in (0, 1)
        Where the TPR is read.
    """
    confidence = check_probability(confidence, "confidence")
    fpr = check_probability(fpr, "fpr")
    if not isinstance(table, Mapping) and not hasattr(table, "columns"):
        raise ValueError(f"`table` must be a pandas DataFrame or a mapping of column names to arrays, got {type(table).__name__}")
    names = encode_columns(table)[0]
    x, categorical, member, folds, seed = _checked(table, is_member, folds, seed)
    scores, held_out, fitted = _cross_validated(x, categorical, member, folds, seed)
    return baseline_from_scores(
        scores, member, held_out, folds=folds, seed=seed, confidence=confidence, fpr=fpr, columns=names,
        separating=lambda: _separating(x, member, scores, fitted, names, seed),
    )  # fmt: skip


def baseline_from_scores(
    scores: np.ndarray,
    member: np.ndarray,
    held_out: list[np.ndarray],
    *,
    folds: int,
    seed: int,
    confidence: float,
    fpr: float,
    columns: tuple[str, ...],
    separating: Callable[[], tuple[tuple[str, float], ...]],
    method: str = METHOD,
) -> BlindBaseline:
    """The result of any blind classifier's out-of-fold ``scores`` (``held_out``: each fold's rows): AUC and TPR with intervals, the test, ``separating()`` when flagged."""
    interval = auc_interval(scores[member], scores[~member], confidence=confidence)
    metrics = attack_metrics(scores, member, fpr=(fpr,), confidence=confidence)
    shown = supported_fpr(fpr, metrics.num_out)
    p_value = split_p_value(fold_p_values(scores, member, held_out))
    flagged = p_value <= 1.0 - confidence
    return BlindBaseline(
        auc=interval.auc,
        auc_low=interval.low,
        auc_high=interval.high,
        tpr=float(metrics.tpr[0]) if shown else None,
        tpr_low=float(metrics.tpr_low[0]) if shown else None,
        tpr_high=float(metrics.tpr_high[0]) if shown else None,
        fpr=fpr,
        confidence=confidence,
        folds=folds,
        seed=seed,
        num_in=metrics.num_in,
        num_out=metrics.num_out,
        flagged=flagged,
        columns=columns,
        separating=separating() if flagged else (),
        method=method,
        p_value=p_value,
    )
