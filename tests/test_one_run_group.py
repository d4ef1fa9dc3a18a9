"""Canaries inserted several times: the group's one-run bound, turned into a record's by group privacy, holds for the record."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from privaudit.stats.conversions import gdp_epsilon
from privaudit.stats.one_run_combined import one_run_lower_bound
from privaudit.stats.one_run_group import group_delta, per_record_one_run_lower_bound

DELTA = 1e-5


def test_group_delta_is_the_sum_of_group_privacy():
    # brute force: δ_k = δ (1 + e^ε + ... + e^{(k-1)ε})
    for epsilon, copies in ((0.0, 1), (0.3, 4), (2.0, 7)):
        assert group_delta(DELTA, epsilon, copies) == pytest.approx(DELTA * sum(np.exp(i * epsilon) for i in range(copies)), rel=1e-12)
    with pytest.raises(ValueError, match="`copies` must be"):
        group_delta(DELTA, 1.0, 0)


def test_one_copy_is_the_plain_bound():
    rng = np.random.default_rng(3)
    member = rng.random(400) < 0.5
    scores = 2.0 * member + rng.normal(size=400)
    assert per_record_one_run_lower_bound(scores, member, copies=1, delta=DELTA) == one_run_lower_bound(scores, member, delta=DELTA)


def _correlated_copies(rng, m: int, mu: float, copies: int):
    # every copy moves the one observation by mu: each record is mu-GDP, the group of copies is (copies * mu)-GDP, exactly
    member = rng.random(m) < 0.5
    return copies * mu * member + rng.normal(size=m), member


def test_the_record_bound_covers_the_record_epsilon_where_the_group_bound_does_not():
    mu, copies, trials, confidence = 0.5, 4, 60, 0.95
    truth = float(gdp_epsilon(mu, DELTA))  # each record's ε at δ
    rng = np.random.default_rng(11)
    record_over = group_over = 0
    for _ in range(trials):
        scores, member = _correlated_copies(rng, 1000, mu, copies)
        group_over += one_run_lower_bound(scores, member, delta=DELTA, confidence=confidence).epsilon > truth
        record = per_record_one_run_lower_bound(scores, member, copies=copies, delta=DELTA, confidence=confidence)
        assert record.delta == DELTA
        record_over += record.epsilon > truth
    # at 95% the exceedances are Binomial(trials, <= 0.05): more than its 0.999 quantile fails the coverage
    assert record_over <= stats.binom.ppf(0.999, trials, 1.0 - confidence)
    # the group's bound, read as a record's, is wrong in most trials: this test would catch a missing conversion
    assert group_over >= trials // 2


def test_a_group_delta_of_one_or_more_rejects_nothing(monkeypatch):
    import dataclasses

    import privaudit.stats.one_run_group as group

    rng = np.random.default_rng(5)
    scores, member = _correlated_copies(rng, 500, 3.0, 3)
    with pytest.raises(ValueError, match=r"`delta` must be below 1 / copies = 0.333333"):
        per_record_one_run_lower_bound(scores, member, copies=3, delta=0.4)
    # a group bound of 30 leaves 0.01 (1 + e^10 + e^20) >= 1: no record δ below 1 to test at, so nothing is rejected
    calls = []

    def strong(*args, **kwargs):
        calls.append(kwargs["delta"])
        return dataclasses.replace(one_run_lower_bound(*args, **kwargs), epsilon=30.0)

    monkeypatch.setattr(group, "one_run_lower_bound", strong)
    bound = per_record_one_run_lower_bound(scores, member, copies=3, delta=0.01)
    assert calls == [pytest.approx(0.03)] and bound.epsilon == 0.0 and bound.delta == 0.01
