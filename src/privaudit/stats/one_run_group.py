"""One-run bounds for canaries that appear several times in the training data: from the group's ε to one record's.

A canary inserted ``copies`` times is a group of ``copies`` records, so the
one-run bound on its scores bounds the group's ε, not a record's. Group
privacy converts: a mechanism (ε, δ)-DP for each record is
(kε, δ_k(ε))-DP for a group of k, with δ_k(ε) = δ · Σ_{i<k} e^{iε}
(Dwork and Roth, Theorem 2.2's induction). So the hypothesis "each record
is (ε, δ)-DP" is rejected when the group's one-run bound at δ_k(ε), a δ
fixed by the hypothesis alone, exceeds kε; inverting these tests gives the
record's lower bound ε*, the ε where b(δ_k(ε)) = kε (b, the group bound at
a given δ, decreases in δ).

:func:`per_record_one_run_lower_bound` takes one step from above instead of
solving for ε*: b₀ = b(δ_k(0)) ≥ kε*, then b₁ = b(δ_k(b₀/k)) ≤ kε*, and
reports b₁/k ≤ ε*: valid at the stated confidence, two bounds computed.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
from scipy.special import logsumexp

from .._core.validation import check_count, check_probability, check_real
from .one_run_combined import OneRunLowerBound, one_run_lower_bound

__all__ = ["group_delta", "per_record_one_run_lower_bound"]


def group_delta(delta: Any, epsilon: Any, copies: Any) -> float:
    """δ of a group of ``copies`` records when each record is (ε, δ)-DP: δ · Σ_{i<copies} e^{iε}, summed in the log domain.

    >>> group_delta(1e-5, 0.0, 4)  # ε = 0: k δ
    4e-05
    >>> round(group_delta(1e-5, 1.0, 2) / 1e-5, 6)  # 1 + e
    3.718282
    """
    delta = check_probability(delta, "delta")
    epsilon = check_real(epsilon, "epsilon")
    if epsilon < 0.0:
        raise ValueError(f"`epsilon` must be >= 0, got {epsilon:g}")
    copies = check_count(copies, "copies", minimum=1)
    return float(np.exp(np.log(delta) + logsumexp(epsilon * np.arange(copies))))


def per_record_one_run_lower_bound(scores: Any, is_member: Any, *, copies: Any, delta: Any, confidence: Any = 0.95, **options: Any) -> OneRunLowerBound:
    """A record's one-run ε lower bound at ``delta``, from canaries each inserted ``copies`` times (one fair coin per canary).

    ``options`` go to :func:`~privaudit.stats.one_run_combined.one_run_lower_bound`.
    With ``copies = 1`` this is that function. The result's ``epsilon`` and
    ``delta`` are the record's; its ``candidates`` are the group's tests at
    the group δ they ran at.

    >>> rng = np.random.default_rng(0)
    >>> member = rng.random(2000) < 0.5
    >>> scores = 3.0 * member + rng.normal(size=2000)
    >>> group = one_run_lower_bound(scores, member, delta=4e-5)
    >>> record = per_record_one_run_lower_bound(scores, member, copies=4, delta=1e-5)
    >>> 0.0 < record.epsilon <= group.epsilon / 4
    True
    """
    copies = check_count(copies, "copies", minimum=1)
    delta = check_probability(delta, "delta")
    if copies == 1:
        return one_run_lower_bound(scores, is_member, delta=delta, confidence=confidence, **options)
    if delta * copies >= 1.0:
        raise ValueError(f"`delta` must be below 1 / copies = {1.0 / copies:g} for a group of {copies} copies, got {delta:g}")
    upper = one_run_lower_bound(scores, is_member, delta=group_delta(delta, 0.0, copies), confidence=confidence, **options)
    step = group_delta(delta, upper.epsilon / copies, copies) if np.isfinite(upper.epsilon) else 1.0
    if step >= 1.0:  # no group δ below 1 to test at: nothing is rejected
        return dataclasses.replace(upper, epsilon=0.0, delta=delta, candidates=())
    group = one_run_lower_bound(scores, is_member, delta=step, confidence=confidence, **options)
    return dataclasses.replace(group, epsilon=group.epsilon / copies, delta=delta)
