"""What the ``mia`` audit reports of its scores: each attack's AUC and TPR at low FPR, and the records most exposed, ties stated.

* :func:`attack_summaries`: AUC and TPR at 0%, 0.1% and 1% FPR with
  Clopper–Pearson intervals; a TPR is None where the evaluated non-members
  are fewer than 1/FPR (:func:`supported_fpr`);
* :func:`most_vulnerable`: the records online RMIA ranks highest by its log
  ratio, ties broken by online LiRA's score, with RMIA's fraction of z
  dominated beside it; :func:`top_ties` states the ties that remain.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ...stats.mia_metrics import DEFAULT_FPR, attack_metrics, supported_fpr

__all__ = [
    "ATTACKS",
    "FRACTION_KEYS",
    "HEADLINE_ATTACK",
    "id_text",
    "TIE_BREAK_ATTACK",
    "AttackSummary",
    "VulnerableRecord",
    "attack_summaries",
    "most_vulnerable",
    "supported_fpr",
    "top_ties",
]

ATTACKS = ("loss", "lira-online", "lira-offline", "rmia-online", "rmia-offline")
HEADLINE_ATTACK = "rmia-online"
#: Where attack_scores puts each RMIA's fraction of z dominated (shown beside its log ratio, which ranks the records).
FRACTION_KEYS = {"rmia-online": "rmia-online fraction", "rmia-offline": "rmia-offline fraction"}


@dataclasses.dataclass(frozen=True)
class AttackSummary:
    """One attack's AUC and its TPR at each FPR target, with ``confidence`` intervals (in-sample statistics).

    A TPR is None where the evaluated non-members are too few for its FPR
    (fewer than 1/FPR: the TPR "at 0.1% FPR" of 500 non-members would be the
    TPR at zero false positives); ``num_out`` is their count.
    """

    attack: str
    auc: float
    fpr: tuple[float, ...]
    tpr: tuple[float | None, ...]
    tpr_low: tuple[float | None, ...]
    tpr_high: tuple[float | None, ...]
    num_out: int | None = None


@dataclasses.dataclass(frozen=True)
class VulnerableRecord:
    """A record the headline attack scores highest: its row in the pool, score, and whether it was a member.

    ``score`` is online RMIA's log ratio log Pr(x|θ)/Pr(x), ``fraction`` its
    fraction of population samples dominated (the paper's score, a
    non-decreasing function of the ratio).

    ``record_id`` is the user's id of the record (its ``--id-col`` value;
    None: the row is the id); ``attack_scores`` every attack's score of it,
    in the order of the result's ``attacks``.
    """

    record: int
    score: float
    member: bool
    record_id: str | None = None
    attack_scores: tuple[float, ...] = ()
    fraction: float | None = None  # online RMIA's fraction of z dominated (``score`` is its log ratio, which ranks)


def attack_summaries(scores: dict[str, np.ndarray], is_member: np.ndarray, confidence: float) -> list[AttackSummary]:
    """Each attack's AUC and TPR at the FPR targets, with ``confidence`` Clopper–Pearson intervals, in the order of :data:`ATTACKS`.

    A TPR whose FPR needs more non-members than ``is_member`` holds is None (:func:`supported_fpr`).
    """
    summaries = []
    for name in ATTACKS:
        metrics = attack_metrics(np.ravel(scores[name]), np.ravel(is_member), fpr=DEFAULT_FPR, confidence=confidence)
        kept = [supported_fpr(float(f), metrics.num_out) for f in metrics.fpr]
        tpr, low, high = (
            tuple(float(v) if keep else None for v, keep in zip(array, kept, strict=True)) for array in (metrics.tpr, metrics.tpr_low, metrics.tpr_high)
        )
        summaries.append(AttackSummary(name, metrics.auc, tuple(float(f) for f in metrics.fpr), tpr, low, high, num_out=metrics.num_out))
    return summaries


#: Breaks the ties of the headline attack's log ratio in the table (another likelihood ratio); row order only after both.
TIE_BREAK_ATTACK = "lira-online"


def _table_order(scores: dict[str, np.ndarray]) -> np.ndarray:
    """Records from the highest headline score down, ties broken by :data:`TIE_BREAK_ATTACK`'s score, then by row."""
    headline, second = np.ravel(scores[HEADLINE_ATTACK]), np.ravel(scores[TIE_BREAK_ATTACK])
    return np.lexsort((np.arange(headline.size), -second, -headline))


def most_vulnerable(
    scores: dict[str, np.ndarray], is_member: np.ndarray, rows: np.ndarray, user_ids: np.ndarray | None, count: int
) -> tuple[VulnerableRecord, ...]:
    """The ``count`` records the headline attack scores highest, with every attack's score, RMIA's fraction and the user's id.

    Ranked by online RMIA's log ratio, its ties by online LiRA's score (ties
    on both, in row order, are stated by :func:`top_ties`).

    >>> scores = {name: np.array([0.1, 0.9, 0.5]) for name in ATTACKS}
    >>> [(r.record, r.record_id, r.member) for r in most_vulnerable(scores, np.array([False, True, False]), np.array([4, 7, 9]), 10.0 * np.arange(10), 2)]
    [(7, '70', True), (9, '90', False)]
    """
    headline = np.ravel(scores[HEADLINE_ATTACK])
    fraction = scores.get(FRACTION_KEYS[HEADLINE_ATTACK])
    member = np.ravel(is_member)
    return tuple(
        VulnerableRecord(
            int(rows[i]),
            float(headline[i]),
            bool(member[i]),
            record_id=None if user_ids is None else id_text(user_ids[rows[i]]),
            attack_scores=tuple(float(np.ravel(scores[name])[i]) for name in ATTACKS),
            fraction=None if fraction is None else float(np.ravel(fraction)[i]),
        )
        for i in _table_order(scores)[:count]
    )


def top_ties(scores: dict[str, np.ndarray], count: int) -> tuple[tuple[float, int], ...]:
    """(headline score, records) of each tie that decides the top ``count`` of :func:`most_vulnerable`: records equal on both its keys.

    Empty when no tie decides the table (its order is then the scores', never the rows').

    >>> scores = {HEADLINE_ATTACK: np.array([3.0, 1.0, 3.0, 1.0, 0.5]), TIE_BREAK_ATTACK: np.array([0.0, 2.0, 0.0, 1.0, 0.0])}
    >>> top_ties(scores, 3)  # the two 3.0 tie on both keys; the two 1.0 are told apart by the second
    ((3.0, 2),)
    """
    keys = np.stack([np.ravel(scores[HEADLINE_ATTACK]), np.ravel(scores[TIE_BREAK_ATTACK])], axis=1)
    shown = keys[_table_order(scores)[:count]]
    values, counts = np.unique(keys, axis=0, return_counts=True)
    tied = [(float(v[0]), int(c)) for v, c in zip(values, counts, strict=True) if c > 1 and (shown == v).all(axis=1).any()]
    return tuple(sorted(tied, reverse=True))


def id_text(value: Any) -> str:
    """A record's id as the user wrote it: text verbatim, a whole number without a decimal point.

    >>> id_text("P-00017"), id_text(17.0), id_text(np.float64(2.5))
    ('P-00017', '17', '2.5')
    """
    if isinstance(value, str):
        return value
    number = float(value)
    return str(int(number)) if number.is_integer() else repr(number)
