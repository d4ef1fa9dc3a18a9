"""Is an attack's count of members above the j-th highest non-member more than a random split gives? An exact test.

Under the null that membership is a random split of the scored records (the
scores of members and non-members exchangeable), the number of members
scored strictly above the j-th highest non-member is the number of members
drawn before the j-th non-member in a random order of all records: a
negative hypergeometric law (``scipy.stats.nhypergeom``). Ties only lower
the strict count, so the p-value stays valid with them. At j = 1 the count
is the attack's TPR at FPR 0 (members above every non-member); at
j = ⌊f k⌋ + 1 it is the count behind the TPR at FPR f (:func:`privaudit.stats.metrics.tpr_at_fpr`).

>>> found = members_above(np.r_[np.full(20, 9.0), np.zeros(80)], np.zeros(50), fpr=0.0)
>>> found.count, round(found.expected_by_chance, 2)  # 20 copies of 100 members above all 50 non-members; chance: 100/51
(20, 1.96)
>>> from math import comb
>>> abs(found.p_value - comb(100, 20) / comb(150, 20)) < 1e-12  # the first 20 of 150 records all members
True
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np
from scipy import stats

from .._core.results import Result
from .._core.validation import as_scores, check_fraction

__all__ = ["MembersAbove", "members_above", "members_among_flagged_p_value"]


@dataclasses.dataclass(frozen=True)
class MembersAbove(Result):
    """Members scored strictly above the ``rank``-th highest non-member, against a random split of the records.

    ``p_value``: P[count >= observed] when membership is a random split
    (exact; conservative with ties). ``expected_by_chance``: its mean there.
    ``above``: the members' positions (in the ``in_scores`` order) that count.
    """

    fpr: float
    rank: int
    count: int
    num_in: int
    num_out: int
    expected_by_chance: float
    p_value: float
    above: np.ndarray
    kind: str = "exact test"


def members_above(in_scores: Any, out_scores: Any, *, fpr: Any = 0.0) -> MembersAbove:
    """Count the members above the threshold that meets ``fpr`` (ties never split) and test that count against a random split.

    >>> members_above([3.0, 2.0, 0.5], [1.0, 0.0], fpr=0.0).count
    2
    >>> round(members_above([3.0, 2.0, 0.5], [1.0, 0.0], fpr=0.0).p_value, 4)  # 2 of 3 members first among 5 records: 3/10
    0.3
    """
    members = as_scores(in_scores, "in_scores")
    others = as_scores(out_scores, "out_scores")
    target = check_fraction(fpr, "fpr")
    if members.size == 0 or others.size == 0:
        raise ValueError(f"`in_scores` and `out_scores` must both be non-empty, got {members.size} and {others.size}")
    rank = math.floor(target * others.size + 1e-9) + 1  # non-members allowed at or above the threshold, plus one
    if rank > others.size:
        raise ValueError(f"`fpr` {target:g} leaves no non-member below the threshold among {others.size}")
    cut = np.sort(others)[::-1][rank - 1]
    above = np.flatnonzero(members > cut)
    law = stats.nhypergeom(members.size + others.size, members.size, rank)  # members drawn before the rank-th non-member
    return MembersAbove(
        fpr=target,
        rank=rank,
        count=int(above.size),
        num_in=int(members.size),
        num_out=int(others.size),
        expected_by_chance=float(law.mean()),
        p_value=float(min(1.0, law.sf(above.size - 1))),
        above=above,
    )


def members_among_flagged_p_value(flagged: Any, is_member: Any) -> float:
    """P[at least this many members among the flagged records] when membership is a random split (hypergeometric: Fisher's one-sided test).

    >>> round(members_among_flagged_p_value([True, True, False, False], [True, True, False, False]), 12)  # both flagged are members: 1/C(4, 2)
    0.166666666667
    >>> members_among_flagged_p_value([False, False], [True, False])  # nothing flagged
    1.0
    """
    flags, member = np.asarray(flagged, dtype=bool), np.asarray(is_member, dtype=bool)
    if flags.shape != member.shape or flags.ndim != 1:
        raise ValueError(f"`flagged` and `is_member` must be 1-D of one length, got shapes {flags.shape} and {member.shape}")
    total = int(flags.sum())
    if total == 0:
        return 1.0
    return float(stats.hypergeom(member.size, int(member.sum()), total).sf(int(np.sum(flags & member)) - 1))
