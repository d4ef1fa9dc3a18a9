"""The mechanism audit: reference mechanisms with switchable bugs, validity, the claim, the neighbour search, tables.

The 20-seed acceptance of every reference mechanism runs in
``benchmarks/mechanism.py``; here each runs on two seeds.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from mechanisms_reference import (
    EPSILON,
    REFERENCES,
    clamped_count,
    clipped_mean,
    data_sensitivity_mean,
    em_median,
    em_median_probabilities,
    laplace,
    replace_histogram,
    synthetic_histogram,
)
from scipy import stats

from privaudit.audits.mechanism.audit import audit_mechanism
from privaudit.mechanisms.claims import Claim, zcdp_epsilon
from privaudit.stats.conversions import gaussian_epsilon
from privaudit.testing import assert_mechanism_dp

BUDGET = {"samples": 3000, "pilot_samples": 2000}  # 10^4 samples in all: 2 sides x (2000 pilot + 3000 held out)


@pytest.mark.parametrize("seed", [11, 12])
@pytest.mark.parametrize("name", sorted(REFERENCES))
def test_buggy_reference_is_rejected_and_correct_one_is_not(name, seed):
    reference = REFERENCES[name]
    buggy = audit_mechanism(reference.make(reference.buggy), reference.dataset, reference.neighbour, seed=seed, **BUDGET, **reference.claim)
    correct = audit_mechanism(reference.make(reference.correct), reference.dataset, reference.neighbour, seed=seed, **BUDGET, **reference.claim)
    assert buggy.rejected and buggy.verdict == "claim rejected at confidence 0.95" and buggy.epsilon > EPSILON
    assert not correct.rejected and correct.verdict == "not rejected" and correct.epsilon <= EPSILON
    assert buggy.total_samples == correct.total_samples == 10_000


def test_laplace_with_half_the_scale_is_bounded_below_its_true_epsilon():
    # Laplace of scale 1/2 on a sum of sensitivity 1: the privacy loss is exactly 2 (closed form); a lower bound stays below it
    reference = REFERENCES["laplace"]
    bounds = [audit_mechanism(laplace(True), reference.dataset, reference.neighbour, epsilon=1.0, seed=seed, **BUDGET).epsilon for seed in range(5)]
    assert all(1.2 < bound < 2.0 for bound in bounds), bounds


def test_randomised_response_bound_covers_its_true_epsilon():
    # randomised response at its exact epsilon: a valid bound exceeds it in at most 5% of runs (a binomial 99.9% allowance)
    true_epsilon = 1.0
    keep = np.exp(true_epsilon) / (1 + np.exp(true_epsilon))

    def response(dataset, size, rng):
        truth = float(dataset.sum() > 0)
        return np.where(rng.random(size) < keep, truth, 1.0 - truth)

    runs = 150
    over = sum(
        audit_mechanism(response, np.zeros(3), np.array([0.0, 0.0, 1.0]), epsilon=true_epsilon, samples=400, pilot_samples=100, seed=seed).epsilon
        > true_epsilon
        for seed in range(runs)
    )
    assert over <= stats.binom.ppf(0.999, runs, 0.05), over


def test_zcdp_conversion_is_never_below_the_gaussian_mechanisms_own_epsilon():
    # rho = 1/(2 sigma^2) for the Gaussian mechanism; its exact epsilon(delta) from dp_accounting's PLD must not exceed the converted claim
    for sigma in (0.5, 1.0, 3.0):
        for delta in (1e-3, 1e-6):
            assert gaussian_epsilon(sigma, delta) <= zcdp_epsilon(1.0 / (2 * sigma**2), delta) + 1e-9


def test_a_rho_claim_stands_for_its_gaussian_and_falls_for_a_third_of_the_noise():
    rho, delta = 0.5, 1e-5
    sigma = 1.0  # rho = 1/(2 sigma^2) for sensitivity 1

    def gaussian(scale):
        return lambda dataset, size, rng: dataset.sum() + rng.normal(0.0, scale, size)

    pair = (np.zeros(4), np.array([0.0, 0.0, 0.0, 0.0, 1.0]))
    assert not audit_mechanism(gaussian(sigma), *pair, epsilon=None, rho=rho, delta=delta, **BUDGET).rejected
    # sigma/10: rho' = 50, epsilon(1e-5) of the exact Gaussian far above the converted claim of 5.3
    noisy = audit_mechanism(gaussian(sigma / 10), *pair, epsilon=None, rho=rho, delta=delta, **BUDGET)
    assert noisy.rejected and noisy.claimed_epsilon == pytest.approx(Claim(rho=rho, delta=delta).tested_epsilon)


def test_search_finds_the_record_beyond_the_clamp():
    dataset = np.ones(10)
    buggy = audit_mechanism(clamped_count(True), dataset, epsilon=EPSILON, relation="add-remove", domain=(0.0, 5.0), search_samples=400, seed=3, **BUDGET)
    # every record above 1 reveals the bug (true ε of the pair = the record's value): the search keeps one of them
    assert buggy.rejected and buggy.pair.searched and buggy.pair.record[0] > 1.0
    tried = [how for how, _ in buggy.pair.candidates]
    assert "add a record at the domain's maximum" in tried and any(how.startswith("D of one record") for how in tried)
    assert sum(how.startswith("local search") for how in tried) <= 4 and f"{len(tried)} pairs tried" in buggy.pair.search_budget
    correct = audit_mechanism(clamped_count(False), dataset, epsilon=EPSILON, relation="add-remove", domain=(0.0, 5.0), search_samples=400, seed=3, **BUDGET)
    assert not correct.rejected
    decided = {convention.name: convention for convention in buggy.conventions}
    assert decided["neighbouring relation"].decided == "explicit" and decided["record domain"].value == "[0, 5]"


def test_search_under_replace_finds_the_data_dependent_sensitivity():
    dataset = np.linspace(0.4, 0.6, 10)
    result = audit_mechanism(data_sensitivity_mean(True), dataset, epsilon=EPSILON, relation="replace", domain=(0.0, 1.0), search_samples=400, seed=5, **BUDGET)
    assert result.rejected and result.pair.relation == "replace" and result.pair.neighbour_size == result.pair.dataset_size


def test_synthetic_tables_without_noise_are_rejected_and_with_noise_are_not():
    dataset = np.array([0, 1, 2, 0, 1, 2, 0, 1])  # category 3 only in the neighbour
    neighbour = np.append(dataset, 3)
    assert audit_mechanism(synthetic_histogram(True), dataset, neighbour, epsilon=EPSILON, **BUDGET).rejected
    correct = audit_mechanism(synthetic_histogram(False), dataset, neighbour, epsilon=EPSILON, **BUDGET)
    assert not correct.rejected and correct.output_shape == (20, 1)


def test_the_users_dataset_and_global_random_state_are_unchanged():
    dataset, neighbour = np.linspace(0, 1, 10), np.linspace(0, 1, 11)
    copies = dataset.copy(), neighbour.copy()
    state = np.random.get_state()

    def meddling(data, size, rng):
        data[:] = 0.0  # a mechanism that writes to its input only changes a copy
        return rng.laplace(0.0, 1.0, size)

    audit_mechanism(meddling, dataset, np.append(dataset, 1.0), epsilon=1.0, samples=200, pilot_samples=100)
    assert np.array_equal(dataset, copies[0]) and np.array_equal(neighbour, copies[1])
    after = np.random.get_state()
    assert all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(state, after))


def test_a_given_pair_that_is_not_neighbouring_is_refused():
    with pytest.raises(ValueError, match="`--neighbour` must differ from `--dataset` in one record"):
        audit_mechanism(laplace(False), np.zeros(3), np.ones(3), epsilon=1.0)
    with pytest.raises(ValueError, match="`relation` 'replace' does not match the given pair"):
        audit_mechanism(laplace(False), np.zeros(3), np.zeros(4), epsilon=1.0, relation="replace")
    with pytest.raises(ValueError, match="`relation` must be 'add-remove' or 'replace' when no `neighbour` is given"):
        audit_mechanism(laplace(False), np.zeros(3), epsilon=1.0)


def test_a_pair_of_another_relation_than_the_mechanisms_claim_is_refused():
    # a replace-DP mean (known n, sensitivity 1/n) claims nothing about adding a record: auditing it on such a pair would reject a correct mechanism
    def replace_mean(dataset, size, rng):
        data = np.clip(np.asarray(dataset, dtype=float), 0.0, 1.0)
        return data.mean() + rng.laplace(0.0, 1.0 / (len(data) * 1.0), size)

    replace_mean.neighbouring = "replace"
    with pytest.raises(ValueError, match="claims its privacy under `neighbouring` = 'replace', but the given pair differs by one record added or removed"):
        audit_mechanism(replace_mean, np.zeros(3), np.zeros(4), epsilon=1.0)
    replaced = audit_mechanism(replace_mean, np.zeros(3), np.array([0.0, 0.0, 1.0]), epsilon=1.0, samples=2000, pilot_samples=1000)
    assert replaced.pair.relation == "replace"


def test_assert_mechanism_dp_passes_a_correct_mechanism_and_fails_a_buggy_one():
    reference = REFERENCES["noisy-max"]
    result = assert_mechanism_dp(reference.make(False), reference.dataset, reference.neighbour, epsilon=EPSILON, **BUDGET)
    assert not result.rejected and result.epsilon <= EPSILON
    with pytest.raises(AssertionError, match="privacy claim rejected"):
        assert_mechanism_dp(reference.make(True), reference.dataset, reference.neighbour, epsilon=EPSILON, **BUDGET)


def test_sequential_mode_stops_early_on_a_bug_and_spends_the_budget_on_a_correct_mechanism():
    reference = REFERENCES["laplace"]
    buggy = audit_mechanism(laplace(True), reference.dataset, reference.neighbour, epsilon=1.0, stages=4, **BUDGET)
    correct = audit_mechanism(laplace(False), reference.dataset, reference.neighbour, epsilon=1.0, stages=4, **BUDGET)
    assert buggy.rejected and buggy.looks == 1 and buggy.total_samples == 2 * (2000 + 750)
    assert not correct.rejected and correct.looks == 4 and correct.total_samples == 10_000


def test_sequential_bound_covers_the_true_epsilon_under_optional_stopping():
    # randomised response at its exact epsilon, 3 looks with stopping at the first rejection: at most 5% of runs reject
    true_epsilon = 1.0
    keep = np.exp(true_epsilon) / (1 + np.exp(true_epsilon))

    def response(dataset, size, rng):
        truth = float(dataset.sum() > 0)
        return np.where(rng.random(size) < keep, truth, 1.0 - truth)

    runs = 50
    rejected = sum(
        audit_mechanism(response, np.zeros(3), np.array([0.0, 0.0, 1.0]), epsilon=true_epsilon, samples=300, pilot_samples=100, stages=3, seed=seed).rejected
        for seed in range(runs)
    )
    assert rejected <= stats.binom.ppf(0.999, runs, 0.05), rejected


def test_pairs_of_table_records_are_checked_as_multisets_or_in_place():
    from privaudit.mechanisms.neighbours import check_pair

    table = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    shuffled_plus = np.array([[5.0, 6.0], [9.0, 9.0], [1.0, 2.0], [3.0, 4.0]])  # another order, one record added
    assert check_pair(table, shuffled_plus, "--neighbour")[:2] == ("add-remove", (9.0, 9.0))
    assert check_pair(shuffled_plus, table, "--neighbour")[:2] == ("add-remove", (9.0, 9.0))
    replaced = table.copy()
    replaced[1] = [0.0, 0.0]
    assert check_pair(table, replaced, "--neighbour")[:2] == ("replace", (0.0, 0.0))
    with pytest.raises(ValueError, match="got more than one record changed"):
        check_pair(table, np.array([[1.0, 2.0], [7.0, 7.0], [5.0, 6.0], [8.0, 8.0]]), "--neighbour")


def test_search_candidates_are_the_extremes_then_random_records_in_the_domain():
    from privaudit.mechanisms.neighbours import candidates

    dataset = np.array([3.0, 1.0, 2.0])
    found = candidates(dataset, "add-remove", np.array([0.0]), np.array([10.0]), np.random.default_rng(0), 1)
    expected = [[3.0, 2.0], [1.0, 2.0], [3.0, 1.0, 2.0, 0.0], [3.0, 1.0, 2.0, 10.0]]  # remove the smallest, the largest; add the ends
    assert [candidate.neighbour.tolist() for candidate in found[:4]] == expected
    random_removal, random_addition = found[4], found[5]
    assert random_removal.neighbour.size == 2 and random_addition.neighbour.size == 4 and 0.0 <= random_addition.record.item() <= 10.0
    replaced = candidates(dataset, "replace", np.array([0.0]), np.array([10.0]), np.random.default_rng(0), 0)
    assert [candidate.neighbour.tolist() for candidate in replaced] == [[3.0, 10.0, 2.0], [0.0, 1.0, 2.0]]


def test_a_forgotten_lower_clip_is_rejected_with_no_domain_given():
    # the default domain, the data's range [0, 1] widened by its width, reaches -1: replacing 1 by -1 moves the mean by 2/n, twice the claim's 1/n
    dataset = np.linspace(0.0, 1.0, 10)
    buggy = audit_mechanism(clipped_mean(True), dataset, epsilon=EPSILON, seed=2)
    assert buggy.rejected and buggy.pair.searched and min(buggy.pair.record) < 0.0
    decided = {convention.name: convention for convention in buggy.conventions}
    assert decided["record domain"].decided == "default" and decided["record domain"].value == "[-1, 2]"
    assert not audit_mechanism(clipped_mean(False), dataset, epsilon=EPSILON, seed=2).rejected


def test_a_declared_clipping_range_is_the_claims_domain():
    # declared domain [0, 1]: the claim covers records in [0, 1] only, where the mean that forgot its lower clip is 1-DP; no record outside is tried
    mechanism = clipped_mean(True)
    mechanism.domain = (0.0, 1.0)
    result = audit_mechanism(mechanism, np.linspace(0.0, 1.0, 10), epsilon=EPSILON, seed=2, samples=2000)
    decided = {convention.name: convention for convention in result.conventions}
    assert decided["record domain"].decided == "explicit" and decided["record domain"].value == "[0, 1]"
    assert all(0.0 <= value <= 1.0 for value in result.pair.record) and not result.rejected
    with pytest.raises(ValueError, match="the `domain` attribute of `--mechanism` must be"):
        mechanism.domain = (1.0, 0.0)
        audit_mechanism(mechanism, np.linspace(0.0, 1.0, 10), epsilon=EPSILON)


def test_the_replace_one_histogram_bug_is_bounded_near_its_true_epsilon():
    # noise for add/remove claimed under replace-one: two counts move, true ε = 2 (closed form); the density ratio finds both bins
    dataset = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    neighbour = dataset.copy()
    neighbour[0] = 1
    bounds = []
    for seed in (1, 2):
        result = audit_mechanism(replace_histogram(True), dataset, neighbour, epsilon=EPSILON, seed=seed)
        bounds.append(result.epsilon)
        assert result.rejected and result.tests[result.best_test].statistic in ("density-ratio", "classifier")
    assert all(1.5 < bound < 2.0 for bound in bounds), bounds  # the fixed statistics alone reached 1.1-1.3
    assert not audit_mechanism(replace_histogram(False), dataset, neighbour, epsilon=EPSILON, seed=1).rejected


def test_the_exponential_median_without_its_half_is_rejected_below_its_enumerated_epsilon():
    dataset, neighbour = np.arange(9), np.append(np.arange(9), 0)
    truth = float(np.max(np.abs(np.log(em_median_probabilities(dataset, True)) - np.log(em_median_probabilities(neighbour, True)))))
    result = audit_mechanism(em_median(True), dataset, neighbour, epsilon=EPSILON, seed=4)
    assert result.rejected and EPSILON < result.epsilon < truth
    assert not audit_mechanism(em_median(False), dataset, neighbour, epsilon=EPSILON, seed=4).rejected


def test_from_release_matches_the_vectorised_contract():
    from privaudit.mechanisms.sampling import from_release

    def one_release(data, rng):
        return np.clip(data, 0.0, 1.0).sum() + rng.laplace(0.0, 0.5)

    one_release.neighbouring = "add-remove"
    fast_calls = []

    def vectorised(data, rng, size=None):
        fast_calls.append(size)
        return np.clip(data, 0.0, 1.0).sum() + rng.laplace(0.0, 0.5, size)

    slow, fast = from_release(one_release), from_release(vectorised)
    # the same generator draws the same Laplace variates one by one or at once: the two paths agree sample for sample
    assert np.array_equal(slow(np.ones(3), 5, np.random.default_rng(0)), fast(np.ones(3), 5, np.random.default_rng(0)))
    assert fast_calls == [5] and slow.neighbouring == "add-remove"
    result = audit_mechanism(slow, np.linspace(0, 1, 10), np.append(np.linspace(0, 1, 10), 1.0), epsilon=1.0, samples=2000, pilot_samples=1000)
    assert result.rejected  # scale 0.5: true ε = 2


@pytest.mark.parametrize("relation", ["add-remove", "replace"])
def test_local_moves_keep_every_pair_neighbouring_with_its_stated_record(relation):
    # chains of random moves (record moved, shared record dropped or duplicated) from every candidate: check_pair, an independent check, agrees
    from privaudit.mechanisms.neighbours import candidates, check_pair, dataset_variants
    from privaudit.mechanisms.search import _moves

    rng = np.random.default_rng(5)
    dataset = np.array([0.2, 0.9, 0.4, 0.7])
    low, high = np.array([-1.0]), np.array([2.0])
    starts = candidates(dataset, relation, low, high, rng, 2)
    for _, other in dataset_variants(dataset, low, high):
        starts += [dataclasses.replace(c, dataset=other) for c in candidates(other, relation, low, high, rng, 0)]
    for start in starts:
        current = start
        for _ in range(12):
            moved = _moves(current, dataset, low, high, rng)
            if moved is None:
                continue
            d = dataset if moved.dataset is None else moved.dataset
            seen, record, _ = check_pair(d, moved.neighbour, "--neighbour")
            assert seen == relation and record == tuple(np.ravel(moved.record)), (start.how, moved.how)
            assert np.all(moved.record >= low) and np.all(moved.record <= high)
            current = moved


def test_search_draws_d_once_per_distinct_content_and_again_for_new_content():
    # the search caches D's samples; keyed by id() a freed D's id could be reused by a new D and get its samples (a run-to-run difference)
    from privaudit.mechanisms.neighbours import Candidate
    from privaudit.mechanisms.search import _Scorer

    seen: list[np.ndarray] = []

    def mean(data, size, rng):
        seen.append(np.array(data, copy=True))
        return rng.laplace(np.mean(data), 1.0, size)

    given = np.array([0.0, 1.0])
    score = _Scorer(mean, given, (), Claim(epsilon=1.0, delta=0.0), 20, np.random.default_rng(0), "mechanism")
    twin = given.copy()  # equal content, another object: one draw of D serves both
    for dataset in (None, twin):
        score(Candidate("add", np.array([0.0, 1.0, 2.0]), np.array([2.0]), dataset))
    assert len(seen) == 3 and score.drawn == 60  # D once, D' twice
    for k in range(20):  # fresh datasets made and freed, as the local search does: each new content is drawn
        score(Candidate("add", np.array([0.0, 1.0, float(k), 2.0]), np.array([2.0]), np.array([0.0, 1.0, float(k)])))
    drawn_datasets = {tuple(d) for d in seen if d.shape[0] == 3}
    assert len(drawn_datasets) == 20
