"""Coverage of the mia audit's ε lower bounds: the pipeline's own draws, attacks, choice of rule and one-run bound on simulated signals.

No model is trained. Each trial draws the audit's design
(:func:`privaudit.audits.mia.bounds.draw_design`: canaries, population
samples, calibration references, the fair coins),
simulates every model's logit-confidence signals from it, and runs the
audit's scoring (:func:`slot_scores`, :func:`reference_slot_scores`), its choice of attack and
guess rule on the references and its bound on every slot (:func:`design_bound`) on them. The audited
models' signals depend on each coin through a mechanism whose ε is known
exactly, so the bound may exceed that ε (or, on a null mechanism, 0) at most
at rate 1 − confidence: with TRIALS trials, at most ALLOWED times, the count
that Bin(TRIALS, 1 − confidence) exceeds with probability < 0.001.
"""

from __future__ import annotations

import functools
import math

import numpy as np
import pytest
from scipy import optimize, stats

from privaudit.audits.mia.bounds import design_bound, draw_design, reference_slot_scores, slot_scores
from privaudit.audits.mia.config import MIAConfig

TRIALS = 80
CONFIDENCE = 0.9
DELTA = 1e-5
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 1 - CONFIDENCE))
RECORDS, REFERENCES, POPULATION = 500, 4, 100
CONFIG = MIAConfig(num_references=REFERENCES)
DESIGNS = {"canary": dict(num_canaries=200, num_trial_models=1), "leave-one-out": dict(num_canaries=20, num_trial_models=2)}


def gdp_epsilon_exact(mu: float, delta: float) -> float:
    """ε(δ) of μ-GDP (Dong, Roth and Su, Corollary 2.13), solved here with scipy's brentq."""

    def gap(epsilon):
        return stats.norm.cdf(-epsilon / mu + mu / 2) - math.exp(epsilon) * stats.norm.cdf(-epsilon / mu - mu / 2) - delta

    return optimize.brentq(gap, 0.0, 50.0, xtol=1e-12)


def rr_epsilon_exact(epsilon: float, delta: float) -> float:
    """ε(δ) of randomized response with pure ε: δ(ε') = (e^ε − e^ε')/(1 + e^ε) for ε' < ε."""
    return math.log(math.exp(epsilon) - delta * (1 + math.exp(epsilon)))


def simulate(mode: str, seed: int, mechanism):
    """(bound, AUC-free scores) of one simulated audit: the design drawn as the audit draws it, signals from ``mechanism``."""
    rng = np.random.default_rng(seed)
    design = draw_design(seed, np.arange(RECORDS) % 3, mode=mode, num_references=REFERENCES, num_population=POPULATION, **DESIGNS[mode])
    difficulty = rng.normal(0.0, 2.0, RECORDS)  # shared by every model: some records are hard for all
    # the references: any signals independent of the audited coins (here, a membership effect of 2)
    references = difficulty + 2.0 * design.references + rng.normal(size=design.references.shape)
    # the audited models: each signal depends on its own coin only, through an ε-DP mechanism of that coin
    trials = difficulty + mechanism(design.trials, rng)
    replicas = reference_slot_scores(references, design, CONFIG)
    return design_bound(slot_scores(trials, references, design, CONFIG), replicas, design, delta=DELTA, confidence=CONFIDENCE)[0]


def null(coins, rng):
    return rng.normal(size=coins.shape)


def gaussian(mu):
    def mechanism(coins, rng):  # μ-GDP in each coin
        return mu * coins + rng.normal(size=coins.shape)

    return mechanism


def randomized_response(epsilon):
    def mechanism(coins, rng):  # ε-DP in each coin; small noise only breaks ties
        keep = rng.random(coins.shape) < 1 / (1 + math.exp(-epsilon))
        return 3.0 * np.where(keep, coins, ~coins) + rng.normal(0.0, 0.1, coins.shape)

    return mechanism


@pytest.mark.parametrize("mode", DESIGNS)
def test_null_mechanism_bound_is_positive_at_most_at_rate_one_minus_confidence(mode):
    positive = sum(simulate(mode, seed, null).epsilon > 0.0 for seed in range(TRIALS))
    assert positive <= ALLOWED


@pytest.mark.parametrize("mode", DESIGNS)
@pytest.mark.parametrize(
    ("mechanism", "true_epsilon"),
    [(gaussian(3.0), gdp_epsilon_exact(3.0, DELTA)), (randomized_response(2.0), rr_epsilon_exact(2.0, DELTA))],
    ids=["gaussian-mu3", "randomized-response-eps2"],
)
def test_bound_exceeds_the_mechanisms_exact_epsilon_at_most_at_rate_one_minus_confidence(mode, mechanism, true_epsilon):
    bounds = np.array([simulate(mode, 1000 + seed, mechanism).epsilon for seed in range(TRIALS)])
    assert int((bounds > true_epsilon).sum()) <= ALLOWED
    # and the pipeline detects the leak in most trials, so the check above is not vacuous
    # (the Gaussian's ε(δ) at δ = 1e-5 is far above what m slots can show; randomized response is close, below)
    assert np.median(bounds) > 0.0


def test_randomized_response_bound_is_close_to_its_exact_epsilon():
    # ε = 2 randomized response, every slot read as well as it can be: the pooled bound comes
    # within a factor 2 of the exact ε in the median (tight enough that the coverage test above bites)
    bounds = np.array([simulate("leave-one-out", 2000 + seed, randomized_response(2.0)).epsilon for seed in range(20)])
    assert 0.5 * 2.0 < np.median(bounds) < rr_epsilon_exact(2.0, DELTA)


def test_calibration_references_never_depend_on_the_coins():
    # the references' training sets come from their own seed: the same whatever the coins, which differ by seed
    a = draw_design(7, np.arange(RECORDS) % 3, mode="leave-one-out", num_references=REFERENCES, num_population=POPULATION, **DESIGNS["leave-one-out"])
    b = draw_design(7, np.arange(RECORDS) % 3, mode="leave-one-out", num_references=6, num_population=POPULATION, **DESIGNS["leave-one-out"])
    assert np.array_equal(a.trials, b.trials)  # the coins do not move when the references change
    assert not (a.trials & a.population).any() and (a.references.sum(axis=0) == REFERENCES // 2).all()
    # the coins are fair: Bin(T × a, ½) within 5 standard deviations
    slots = a.coins.size
    assert abs(int(a.coins.sum()) - slots / 2) < 5 * math.sqrt(slots / 4)


def test_canary_design_mislabels_only_canaries_and_keeps_them_out_of_the_population():
    labels = np.arange(RECORDS) % 3
    design = draw_design(3, labels, mode="canary", num_references=REFERENCES, num_population=POPULATION, **DESIGNS["canary"])
    changed = design.labels != labels
    assert np.array_equal(changed, design.audited) and changed.sum() == DESIGNS["canary"]["num_canaries"]
    assert not (design.population & design.audited).any() and not design.trials[0, design.population].any()
    assert design.labels.min() >= 0 and design.labels.max() <= 2


def _rule_slots(rng, coins, epsilon):
    """Scores of ε-DP randomized response in each coin (small noise breaks ties)."""
    keep = rng.random(coins.shape) < 1 / (1 + math.exp(-epsilon))
    return 3.0 * np.where(keep, coins, ~coins) + rng.normal(0.0, 0.1, coins.shape)


def test_rule_reads_a_perfect_attack_on_every_slot_in_one_test_and_never_reads_the_coins():
    from privaudit.audits.mia.guesses import choose_rule
    from privaudit.stats.one_run import epsilon_one_run

    rng = np.random.default_rng(5)
    answers = rng.random((4, 300)) < 0.5
    chosen, _ = choose_rule({"loss": answers + rng.normal(0.0, 0.1, answers.shape)}, answers, num_slots=300, confidence=CONFIDENCE)
    coins = rng.permutation(np.arange(300) < 170)  # an unequal draw: 170 of 300 in
    scores = coins + rng.normal(0.0, 0.1, 300)  # a perfect attack (5 standard deviations apart)
    rule = chosen.place(scores)
    bound = rule.bound(scores, coins, delta=DELTA, confidence=CONFIDENCE)
    # every slot guessed right, one test at the full level (no Bonferroni, no pilot slots left out)
    assert bound.candidates == (("steinke", 300, 300, bound.epsilon),) and bound.num_tests == 1
    assert bound.epsilon == pytest.approx(epsilon_one_run(300, 300, 300, delta=DELTA, confidence=CONFIDENCE).epsilon, abs=1e-9)
    # the threshold sits in the middle of the target's widest gap, between the two sides
    assert scores[~coins].max() < rule.low == rule.high < scores[coins].min()
    # the guesses are the same whatever the coins: only the count of right guesses moves
    shuffled = rng.permutation(coins)
    assert rule.bound(scores, shuffled, delta=DELTA, confidence=CONFIDENCE).candidates[0][1] == 300


def test_rule_is_the_brute_force_best_on_the_replicas_and_abstains_where_they_err():
    from privaudit.audits.mia.guesses import RULE_QUANTILES, choose_rule
    from privaudit.stats.one_run import epsilon_one_run

    rng = np.random.default_rng(11)
    answers = rng.random((3, 60)) < 0.5
    scores = answers + rng.normal(0.0, 0.1, answers.shape)
    scores[~answers & (rng.random(answers.shape) < 0.1)] = 0.9  # a few non-members that look like members
    chosen, table = choose_rule({"loss": scores}, answers, num_slots=60, confidence=CONFIDENCE)
    # brute force: every pair of thresholds on the grid, each replica's bound from the root search at δ = 0
    grid = np.unique(np.quantile(scores, RULE_QUANTILES))
    thresholds = np.sort(np.r_[grid, (grid[:-1] + grid[1:]) / 2])
    exact = functools.cache(lambda made, right: epsilon_one_run(60, made, right, delta=0.0, confidence=CONFIDENCE).epsilon)
    best = (-1.0, -1.0)
    for i, low in enumerate(thresholds):
        for high in thresholds[i:]:
            values = []
            for row, member in zip(scores, answers, strict=True):
                inside, outside = row > high, row < low
                made, right = int(inside.sum() + outside.sum()), int((inside & member).sum() + (outside & ~member).sum())
                values.append(exact(made, right))
            best = max(best, (min(values), float(np.mean(values))))
    assert table[0][1:3] == pytest.approx(best, abs=1e-6)
    # the non-members at 0.9 are left out: the "in" threshold lies above them
    assert chosen.high[0] >= 0.9 and chosen.attack == "loss"


def test_rule_coverage_over_500_trials_on_randomized_response():
    from privaudit.audits.mia.guesses import choose_rule

    trials, epsilon, level = 500, 1.0, 0.95
    allowed = int(stats.binom.ppf(0.999, trials, 1 - level))
    exceed = positive = 0
    for seed in range(trials):
        rng = np.random.default_rng(seed)
        answers = rng.random((4, 100)) < 0.5
        chosen, _ = choose_rule({"loss": _rule_slots(rng, answers, epsilon)}, answers, num_slots=100, confidence=level)
        coins = rng.random(100) < 0.5
        scores = _rule_slots(rng, coins, epsilon)
        if min(coins.sum(), (~coins).sum()) < 2:
            continue
        bound = chosen.place(scores).bound(scores, coins, delta=DELTA, confidence=level).epsilon
        exceed += bound > rr_epsilon_exact(epsilon, DELTA)
        positive += bound > 0
    assert exceed <= allowed
    assert positive > trials // 4  # not vacuous: the leak is found in many trials
