"""Coverage of the mia audit's ε lower bounds: the pipeline's own draws, attacks, pilot choice and one-run bound on simulated signals.

No model is trained. Each trial draws the audit's design
(:func:`privaudit.audits.mia.bounds.draw_design`: canaries, population
samples, calibration references, the fair coins, the pilot records),
simulates every model's logit-confidence signals from it, and runs the
audit's scoring (:func:`slot_scores`), its choice of attack on the pilot
slots and its bound on the held-out slots (:func:`design_bound`) on them. The audited
models' signals depend on each coin through a mechanism whose ε is known
exactly, so the bound may exceed that ε (or, on a null mechanism, 0) at most
at rate 1 − confidence: with TRIALS trials, at most ALLOWED times, the count
that Bin(TRIALS, 1 − confidence) exceeds with probability < 0.001.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import optimize, stats

from privaudit.audits.mia.bounds import design_bound, draw_design, slot_scores
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
    return design_bound(slot_scores(trials, references, design, CONFIG), design, delta=DELTA, confidence=CONFIDENCE)[0]


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


def test_guess_rule_reads_an_unequal_draw_without_wrong_guesses_and_never_reads_the_held_out_coins():
    from privaudit.audits.mia.guesses import pilot_value, slot_bound
    from privaudit.stats.one_run import epsilon_one_run

    rng = np.random.default_rng(5)
    coins = rng.permutation(np.arange(300) < 170)  # 170 of 300 in: half of each guess count "in" would force wrong guesses
    scores = coins + rng.normal(0.0, 0.1, 300)  # a perfect attack (5 standard deviations apart)
    _, _, rule = pilot_value(scores[:45], coins[:45], delta=DELTA, confidence=CONFIDENCE)
    bound = rule.bound(scores[45:], coins[45:], delta=DELTA, confidence=CONFIDENCE)
    # every one of the 255 held-out canaries guessed right, at the level of 2 Bonferroni-corrected tests
    assert bound.candidates[-1][1:3] == (255, 255) and bound.num_tests == 2
    assert bound.epsilon == pytest.approx(epsilon_one_run(255, 255, 255, delta=DELTA, confidence=1 - (1 - CONFIDENCE) / 2).epsilon, abs=1e-9)
    assert slot_bound(scores[45:], coins[45:], delta=DELTA, confidence=CONFIDENCE).epsilon < bound.epsilon  # the default half-in sweep
    # the guesses are the same whatever the held-out coins: only the count of right guesses moves
    shuffled = rng.permutation(coins[45:])
    again = rule.bound(scores[45:], shuffled, delta=DELTA, confidence=CONFIDENCE)
    assert [item[1] for item in again.candidates] == [item[1] for item in bound.candidates]
