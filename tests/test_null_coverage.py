"""Every lower bound of the public stats API is 0 on null data in at least 95% of seeded trials.

Null data: "in" and "out" observations from one distribution, canaries whose
inclusion the model never saw. Each bound below is computed on 200 seeded data
sets; at 95% confidence it may be positive in at most the number of trials
that Bin(200, 0.05) exceeds with probability < 0.001 (21), so a bound whose
null exceedance rate is truly <= 5% fails this test with probability < 0.001.
Bounds that declare themselves optimistic (``valid=False``: the "best"
threshold, uncorrected sweeps) are only checked to say so.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

import privaudit
from privaudit import (
    Bonferroni,
    SubsampledGaussian,
    epsilon_from_exposure,
    epsilon_lower_bound,
    epsilon_lower_bound_cosines,
    epsilon_one_run,
    epsilon_one_run_fdp,
    epsilon_one_run_gaussian,
    epsilon_one_run_sweep,
    gdp_auc_lower_bound,
    one_run_lower_bound,
    panoramia_bounds,
)
from privaudit.stats.panoramia import real_non_member_bound

TRIALS = 200
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))  # 21
DELTA = 1e-5
SIZE = 200


def null_pairs(seed):
    """TRIALS pairs (in, out) of SIZE scores each, all from N(0, 1)."""
    rng = np.random.default_rng(seed)
    scores = rng.normal(size=(TRIALS, 2, SIZE))
    return [(pair[0], pair[1]) for pair in scores]


def count_positive(values) -> int:
    values = np.asarray(list(values), dtype=np.float64)
    assert values.shape == (TRIALS,) and np.all(values >= 0.0)
    return int(np.count_nonzero(values > 0.0))


THRESHOLD_BOUNDS = [(method, interval) for method in ("gdp", "eps-delta", "pure") for interval in ("clopper-pearson", "jeffreys", "bayes")] + [
    ("pure", "katz-log")
]


@pytest.mark.parametrize(("method", "interval"), THRESHOLD_BOUNDS)
def test_epsilon_lower_bound_on_null_data(method, interval):
    pairs = null_pairs(1)
    results = [epsilon_lower_bound(a, b, delta=DELTA, method=method, interval=interval, seed=i) for i, (a, b) in enumerate(pairs)]
    assert all(result.valid for result in results)
    assert count_positive(result.epsilon for result in results) <= ALLOWED


@pytest.mark.parametrize("threshold", [Bonferroni(num_thresholds=4), 0.0])
def test_other_threshold_strategies_on_null_data(threshold):
    pairs = null_pairs(2)
    results = [epsilon_lower_bound(a, b, delta=DELTA, threshold=threshold, seed=i) for i, (a, b) in enumerate(pairs)]
    assert count_positive(result.epsilon for result in results) <= ALLOWED


def test_pld_bound_on_null_data():
    pairs = null_pairs(3)
    mechanism = SubsampledGaussian(sampling_prob=0.1, num_steps=10)
    results = [epsilon_lower_bound(a, b, delta=DELTA, method=mechanism, seed=i) for i, (a, b) in enumerate(pairs)]
    assert count_positive(result.epsilon for result in results) <= ALLOWED


def test_the_best_threshold_declares_itself_optimistic():
    a, b = null_pairs(4)[0]
    assert epsilon_lower_bound(a, b, delta=DELTA, threshold="best").valid is False


def test_gdp_auc_lower_bound_on_null_data():
    pairs = null_pairs(5)
    assert count_positive(gdp_auc_lower_bound(a, b, delta=DELTA).epsilon for a, b in pairs) <= ALLOWED


def test_epsilon_from_exposure_on_null_data():
    rng = np.random.default_rng(6)
    canaries, references = rng.normal(size=(TRIALS, 50)), rng.normal(size=(TRIALS, 2000))
    values = (epsilon_from_exposure(c, r).epsilon for c, r in zip(canaries, references, strict=True))
    assert count_positive(values) <= ALLOWED


def test_one_run_bounds_on_null_data():
    rng = np.random.default_rng(7)
    m = 1000
    correct = rng.binomial(200, 0.5, TRIALS)  # 200 guesses, each right with probability ½
    assert count_positive(epsilon_one_run(m, 200, int(v), delta=DELTA).epsilon for v in correct) <= ALLOWED
    members = rng.random((TRIALS, m)) < 0.5
    scores = rng.normal(size=(TRIALS, m))
    sweeps = [epsilon_one_run_sweep(s, member, delta=DELTA) for s, member in zip(scores, members, strict=True)]
    assert all(sweep.valid for sweep in sweeps)
    assert count_positive(sweep.epsilon for sweep in sweeps) <= ALLOWED
    fdp = [epsilon_one_run_fdp(s, member, delta=DELTA) for s, member in zip(scores, members, strict=True)]
    assert count_positive(result.epsilon for result in fdp) <= ALLOWED
    gaussian = [epsilon_one_run_gaussian(s, member, delta=DELTA) for s, member in zip(scores, members, strict=True)]
    assert count_positive(result.epsilon for result in gaussian) <= ALLOWED
    best = [one_run_lower_bound(s, member, delta=DELTA, methods=("steinke", "fdp", "gaussian")) for s, member in zip(scores, members, strict=True)]
    assert all(result.valid for result in best)
    assert count_positive(result.epsilon for result in best) <= ALLOWED


def test_cosine_lower_bound_on_null_data():
    # cosines of never-inserted canaries: (1 + cos)/2 ~ Beta((d-1)/2, (d-1)/2) (One-shot Thm 3.1)
    rng = np.random.default_rng(8)
    d = 1000
    cosines = 2.0 * rng.beta((d - 1) / 2, (d - 1) / 2, size=(TRIALS, 300)) - 1.0
    for interval in ("clopper-pearson", "jeffreys"):
        values = (epsilon_lower_bound_cosines(c, dimension=d, delta=DELTA, interval=interval).epsilon for c in cosines)
        assert count_positive(values) <= ALLOWED


def test_panoramia_lower_bounds_on_null_data():
    # generated data indistinguishable from real (c = 0) and a model that leaks nothing (ε = 0)
    rng = np.random.default_rng(9)
    members = rng.random((TRIALS, 400)) < 0.5
    baseline, mia = rng.normal(size=(TRIALS, 400)), rng.normal(size=(TRIALS, 400))
    results = [panoramia_bounds(b, a, s) for b, a, s in zip(baseline, mia, members, strict=True)]
    assert all(result.valid for result in results)
    assert count_positive(result.c_lb for result in results) <= ALLOWED
    assert count_positive(result.c_plus_epsilon_lb for result in results) <= ALLOWED
    assert count_positive(real_non_member_bound(a, s).epsilon for a, s in zip(mia, members, strict=True)) <= ALLOWED


def test_mechanism_tester_with_learned_statistics_on_null_data():
    # a mechanism whose output does not depend on the data: every statistic, the density ratio and the classifier included, bounds 0
    from privaudit.mechanisms.claims import Claim
    from privaudit.mechanisms.tester import bound_samples

    rng = np.random.default_rng(10)
    draws = rng.laplace(size=(TRIALS, 4, 250, 2))
    claim = Claim(epsilon=1.0)
    values = (bound_samples(d[0, :100], d[1, :100], d[2], d[3], claim=claim, seed=i).epsilon for i, d in enumerate(draws))
    assert count_positive(values) <= ALLOWED


def test_mechanism_audit_with_its_pair_search_on_null_data():
    # the search over D and D' picks the pair that looks most different on its own samples: the bound on fresh samples stays 0
    from privaudit.audits.mechanism.audit import audit_mechanism

    def ignores_the_data(dataset, size, rng):
        return rng.laplace(0.0, 1.0, size)

    budget = {"samples": 150, "pilot_samples": 60, "search_samples": 40, "search_random": 1, "search_steps": 2}
    values = (audit_mechanism(ignores_the_data, np.linspace(0, 1, 5), epsilon=1.0, relation="add-remove", seed=i, **budget).epsilon for i in range(TRIALS))
    assert count_positive(values) <= ALLOWED


def test_every_exported_lower_bound_is_covered():
    # a new bound in privaudit's export table must be added here
    covered = {
        "epsilon_lower_bound",
        "gdp_auc_lower_bound",
        "epsilon_from_exposure",
        "epsilon_one_run",
        "epsilon_one_run_sweep",
        "epsilon_one_run_fdp",
        "epsilon_one_run_gaussian",
        "one_run_lower_bound",
        "epsilon_lower_bound_cosines",
        "panoramia_bounds",
    }
    not_bounds = {  # estimates, conversions, metrics, options
        "exposure",
        "exact_exposure",
        "exposure_extrapolated",
        "random_guessing_exposure",
        "roc_curve",
        "roc_auc",
        "tpr_at_fpr",
        "precision_at_recall",
        "Split",
        "Bonferroni",
        "MultiSplit",
        "Best",
        "SubsampledGaussian",
        "step_to_end_epsilon",
        "gdp_delta",
        "gdp_epsilon",
        "gdp_mu",
        "gaussian_epsilon",
        "gaussian_noise_multiplier",
        "tradeoff_gdp",
        "tradeoff_eps_delta",
        "epsilon_two_gaussians",
        "epsilon_one_shot",
        # membership-inference attacks' per-record scores and their metrics: attack statistics, not ε bounds
        "loss_scores",
        "lira_online_scores",
        "lira_offline_scores",
        "rmia_scores",
        "logit_confidence",
        "attack_metrics",
        "write_run",  # writes a run's results.json and report: no bound of its own
    }
    exported = set(privaudit.__all__) - {"__version__"}
    assert exported <= covered | not_bounds, sorted(exported - covered - not_bounds)
