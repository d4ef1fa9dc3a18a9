"""The numpy-built PLDs of the subsampled Gaussian, and the f-DP search on them, against dp_accounting and the per-σ search.

Oracles: dp_accounting's own ``from_gaussian_mechanism``, ``self_compose``,
``get_delta_for_epsilon`` and ``get_epsilon_for_delta`` (the constructions
this module vectorises must give the same distributions), and, for the
one-run f-DP bound, the reference search written out here: bisection on the
noise multiplier with supporting lines read from dp_accounting's pessimistic
PLD on the fine grid, ε from its optimistic PLD.
"""

from __future__ import annotations

import numpy as np
import pytest

from privaudit import SubsampledGaussian, epsilon_one_run_fdp, gaussian_epsilon
from privaudit.stats.gaussian_pld import deltas_for_epsilons, epsilon_for_delta, subsampled_gaussian_pld
from privaudit.stats.one_run_fdp import fdp_rejects

dp_accounting = pytest.importorskip("dp_accounting")
from dp_accounting.pld import privacy_loss_distribution  # noqa: E402

CASES = [(0.65, 0.01, 1e-3), (2.0, 0.05, 1e-2), (0.3, 0.5, 1e-3), (5.0, 0.001, 1e-4), (1.5, 0.2, 1e-3)]


def reference_pld(sigma, q, steps, pessimistic, discretization):
    single = privacy_loss_distribution.from_gaussian_mechanism(
        sigma, sensitivity=1.0, sampling_prob=q, pessimistic_estimate=pessimistic, value_discretization_interval=discretization, use_connect_dots=pessimistic
    )
    return single.self_compose(steps) if steps > 1 else single


@pytest.mark.parametrize(("sigma", "q", "discretization"), CASES)
@pytest.mark.parametrize("pessimistic", [True, False])
@pytest.mark.parametrize("steps", [1, 50])
def test_distributions_are_dp_accountings_bit_for_bit(sigma, q, discretization, pessimistic, steps):
    ours = subsampled_gaussian_pld(sigma, q, steps, pessimistic=pessimistic, discretization=discretization)
    theirs = reference_pld(sigma, q, steps, pessimistic, discretization)
    for side in ("_pmf_remove", "_pmf_add"):
        mine, reference = getattr(ours, side).to_dense_pmf(), getattr(theirs, side).to_dense_pmf()
        assert mine._lower_loss == reference._lower_loss
        np.testing.assert_array_equal(mine._probs, reference._probs)
        assert mine._infinity_mass == reference._infinity_mass


@pytest.mark.parametrize(("sigma", "q", "discretization"), CASES)
@pytest.mark.parametrize("pessimistic", [True, False])
def test_deltas_and_epsilons_are_dp_accountings(sigma, q, discretization, pessimistic):
    pld = reference_pld(sigma, q, 10, pessimistic, discretization)
    epsilons = np.linspace(0.0, 1.5 * pld.get_epsilon_for_delta(1e-12), 50)
    np.testing.assert_allclose(deltas_for_epsilons(pld, epsilons), pld.get_delta_for_epsilon(epsilons), rtol=1e-10, atol=1e-15)
    for delta in (1e-12, 1e-5, 0.1, 0.9):
        # dp_accounting steps its loss grid by repeated addition; ours multiplies: the last digits may differ
        assert epsilon_for_delta(pld, delta) == pytest.approx(pld.get_epsilon_for_delta(delta), rel=1e-10, abs=1e-12)


def reference_rejects(mechanism, m, r, v, level, sigma):
    """The test as the per-σ search ran it: lines from dp_accounting's pessimistic PLD on the fine grid (1e-3)."""
    pld = reference_pld(sigma, mechanism.sampling_prob, mechanism.num_steps, True, 1e-3)
    epsilons = np.linspace(0.0, min(max(pld.get_epsilon_for_delta(1e-12), 1e-3), 50.0), mechanism.num_lines)
    deltas = pld.get_delta_for_epsilon(epsilons)

    def complement(x):
        alpha = 1.0 - x
        return max(0.0, float(np.max(np.maximum(1 - deltas - np.exp(epsilons) * alpha, np.exp(-epsilons) * (1 - deltas - alpha)))))

    return fdp_rejects(complement, m, r, v, level)


@pytest.mark.parametrize(("q", "steps", "mu", "seed"), [(0.2, 5, 2.0, 0), (0.5, 3, 1.5, 1), (0.1, 20, 3.0, 2)])
def test_fdp_search_is_valid_by_the_reference_test_and_within_a_percent_of_its_edge(q, steps, mu, seed):
    rng = np.random.default_rng(seed)
    m, delta = 400, 1e-5
    member = rng.random(m) < 0.5
    mechanism = SubsampledGaussian(q, steps)
    result = epsilon_one_run_fdp(mu * member + rng.normal(size=m), member, delta=delta, family=mechanism, num_guesses=[60, 200])
    level = 0.05 / 2
    made = dict(zip((candidate[1] for candidate in result.candidates), (candidate[2] for candidate in result.candidates), strict=True))
    assert result.epsilon == max(candidate[3] for candidate in result.candidates) > 0.0
    # the headline σ: rejected by the reference test, and σ/1.01 not, so it sits within 1% of the reference's edge
    sigma, r = result.parameter, result.num_guesses
    assert reference_rejects(mechanism, m, r, made[r], level, sigma)
    assert not reference_rejects(mechanism, m, r, made[r], level, sigma / 1.01)
    # its ε is the reference's optimistic ε(δ) of that σ on the fine grid, rounded down
    reference = gaussian_epsilon(sigma, delta, sampling_prob=q, num_steps=steps, pessimistic=False, discretization=1e-4)
    assert reference * (1 - 1e-8) <= result.epsilon <= reference
