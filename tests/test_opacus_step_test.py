"""The per-step test of the Opacus audits (one Gaussian step, the claim's own family): validity by Monte Carlo, oracles, end to end.

Simulated games use the Opacus design: per step k canaries in 10k slots, a
canary slot N(1, σ²), the others N(0, σ²), independent. The t test is exact
there, so its exceedances are held inside the binomial band on both sides;
the order-statistics test on paired observations is held below the upper
end. Levels: 1,000 games, P[Bin(1000, 0.05) outside the band] < 0.002.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from privaudit.stats.bounds import epsilon_lower_bound
from privaudit.stats.families import GaussianDP
from privaudit.stats.gaussian_steps import _paired, gaussian_step_bound
from privaudit.stats.one_run import guess_outcomes
from privaudit.stats.order_statistics import design_num_guesses, order_statistics_p_value

GAMES = 1000
LOW, HIGH = int(stats.binom.ppf(0.001, GAMES, 0.05)), int(stats.binom.isf(0.001, GAMES, 0.05))  # 30, 73
NULL_ZEROS = int(stats.binom.ppf(0.001, GAMES, 0.95))  # 927: at least this many null games at 0


def _games(sigma: float, n_in: int, seed: int, shift: float = 1.0):
    rng = np.random.default_rng(seed)
    for _ in range(GAMES):
        yield rng.normal(shift, sigma, n_in), rng.normal(0.0, sigma, 9 * n_in)


def test_the_t_test_covers_the_true_sigma_exactly_at_the_opacus_design():
    sigma = 1.3
    mus = np.array([gaussian_step_bound(i, o, delta=1e-5).parameter for i, o in _games(sigma, 200, 1)])
    exceed = int(np.sum(mus > 1.0 / sigma))
    assert LOW <= exceed <= HIGH, exceed  # exact: neither above nor far below 5%


def test_the_t_test_refutes_nothing_on_null_games():
    zeros = sum(gaussian_step_bound(i, o, delta=1e-5).epsilon == 0.0 for i, o in _games(1.0, 200, 2, shift=0.0))
    assert zeros >= NULL_ZEROS, zeros


def _paired_exceedances(sigma: float, shift: float, seed: int) -> tuple[int, int]:
    """(games whose paired bound is above 1/σ, games whose bound is 0), from the released counts of each game.

    The bound is above the truth exactly when the truth's p-value is below 5% (the p-value falls with the
    leak), and 0 exactly when the range's bottom is not rejected; both are read off a table over the count
    of right guesses, so 1,000 games cost 1,000 guess counts, not 1,000 bisections. A few games are checked
    against the full bound.
    """
    null, n = GaussianDP(1e-5), 100
    claim = math.sqrt(2.0) / sigma
    r = design_num_guesses(null, claim, n)
    table = [order_statistics_p_value(null, claim, num_canaries=n, num_guesses=r, num_correct=v) for v in range(r + 1)]
    floor = [order_statistics_p_value(null, null.leak_range[0], num_canaries=n, num_guesses=r, num_correct=v) for v in range(r + 1)]
    above = zero = 0
    for g, (inside, outside) in enumerate(_games(sigma, n, seed, shift=shift)):
        scores, coins = _paired(inside, outside, g)
        made, correct = guess_outcomes(scores, coins, np.array([r]), 0.5)
        v = int(correct[0])
        above += table[v] < 0.05
        zero += floor[v] >= 0.05
        if g < 3:
            bound = gaussian_step_bound(inside, outside, delta=1e-5, test="order-statistics", claim=1.0 / sigma, seed=g)
            assert (bound.num_guesses, bound.num_correct) == (int(made[0]), v)
            assert (math.sqrt(2.0) * bound.parameter > claim) == (table[v] < 0.05) and (bound.epsilon == 0.0) == (floor[v] >= 0.05)
    return above, zero


def test_the_paired_order_statistics_test_covers_the_true_sigma():
    above, _ = _paired_exceedances(0.8, 1.0, 3)
    assert above <= HIGH, above


def test_the_paired_order_statistics_test_refutes_nothing_on_null_games():
    _, zero = _paired_exceedances(1.0, 0.0, 4)
    assert zero >= NULL_ZEROS, zero


def test_the_t_test_is_the_noncentral_t_inversion():
    rng = np.random.default_rng(5)
    inside, outside = rng.normal(1.0, 0.9, 300), rng.normal(0.0, 0.9, 2700)
    found = gaussian_step_bound(inside, outside, delta=1e-5, confidence=0.9)
    # independent: scipy's noncentral t, inverted by brentq
    n1, n0 = inside.size, outside.size
    pooled = math.sqrt(((n1 - 1) * inside.var(ddof=1) + (n0 - 1) * outside.var(ddof=1)) / (n1 + n0 - 2))
    scale = math.sqrt(1 / n1 + 1 / n0)
    t = (inside.mean() - outside.mean()) / (pooled * scale)
    noncentrality = optimize.brentq(lambda nc: stats.nct.sf(t, n1 + n0 - 2, nc) - 0.1, 0.0, 2 * t, xtol=1e-12)
    assert found.parameter == pytest.approx(noncentrality * scale, rel=1e-7) and found.parameter <= noncentrality * scale
    assert found.null == f"not a Gaussian step with sigma >= {1 / found.parameter:.4g} (sensitivity 1)" and math.isinf(found.ceiling)


def test_the_t_test_is_tighter_than_the_former_threshold_bound_and_the_paired_test():
    sigma, ours, former, paired = 1.0, [], [], []
    for g, (inside, outside) in enumerate(_games(sigma, 200, 6)):
        if g == 20:
            break
        ours.append(gaussian_step_bound(inside, outside, delta=1e-5).parameter)
        former.append(float(epsilon_lower_bound(inside, outside, delta=1e-5, method="gdp", threshold=0.5).parameter))
        paired.append(gaussian_step_bound(inside, outside, delta=1e-5, test="order-statistics", claim=1.0, seed=g).parameter)
    assert np.median(ours) > np.median(former) and np.median(ours) > np.median(paired)


def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="`test` must be one of gaussian, order-statistics, got 'fdp'"):
        gaussian_step_bound([1.0, 2.0], [0.0, 0.1], delta=1e-5, test="fdp")
    with pytest.raises(ValueError, match="`claim`"):
        gaussian_step_bound([1.0, 2.0], [0.0, 0.1], delta=1e-5, test="order-statistics")


# -- end to end, on tiny Opacus runs --------------------------------------------------------------------------------
torch = pytest.importorskip("torch")
opacus = pytest.importorskip("opacus")


def _dp_accounting_epsilon(sigma: float, delta: float, q: float, steps: int) -> float:
    """ε(δ) of T Poisson-subsampled Gaussian steps from dp_accounting's PLD accountant (the independent oracle)."""
    import dp_accounting
    from dp_accounting.pld import pld_privacy_accountant

    accountant = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.PoissonSampledDpEvent(q, dp_accounting.GaussianDpEvent(sigma)), steps))
    return float(accountant.get_epsilon(delta))


def _check_headline(result, in_scores, out_scores, *, q: float, steps: int, accountant_epsilon: float):
    bound = result.bound
    # the headline is the t test on these observations (independent inversion above), above the former bound on them
    assert bound.method == "gaussian" and bound.parameter == pytest.approx(gaussian_step_bound(in_scores, out_scores, delta=1e-5).parameter, rel=1e-9)
    former = epsilon_lower_bound(in_scores, out_scores, delta=1e-5, method="gdp", threshold=0.5)
    assert result.threshold_bound.epsilon == pytest.approx(former.epsilon, rel=1e-9)
    assert bound.epsilon > former.epsilon > 0.0
    assert result.refuted == f"not DP-SGD with sigma >= {1.0 / bound.parameter:.4g}, q = {q:g}, T = {steps}"
    oracle = _dp_accounting_epsilon(1.0 / bound.parameter, 1e-5, q, steps)  # the refuted DP-SGD's ε, by dp_accounting
    assert 0.97 * oracle <= result.end_to_end_epsilon <= oracle
    assert 0.0 < result.end_to_end_epsilon <= accountant_epsilon


def test_audit_opacus_reports_the_refuted_dpsgd_below_the_accountant():
    from test_opacus_copy import CLIP, SIGMA, user_setup

    from privaudit.integrations.opacus import audit_opacus

    model, optimizer, loader, accountant = user_setup(accountant="rdp")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = audit_opacus(model, optimizer, loader, torch.nn.functional.cross_entropy, accountant=accountant, num_steps=40, canaries_per_step=20, seed=3)
    # the observations again, from the same seeded copy: audit_opacus records none, so rebuild them by the shared collector
    from privaudit.canaries.gradient import GradientCanary
    from privaudit.integrations.opacus import opacus_release
    from privaudit.observation.gradient import collect_gradient_observations

    with torch.random.fork_rng():
        release, auditor = opacus_release(model, optimizer, loader, torch.nn.functional.cross_entropy, 200, accountant=accountant, seed=3)
        obs = collect_gradient_observations(
            release, num_steps=40, canaries_per_step=20, num_slots=200, clip_norm=CLIP, denominator=auditor.denominator,
            canary=GradientCanary(kind="dirac", slot_size=1, norm=100.0), seed=3,
        )  # fmt: skip
    q, steps = result.settings.sample_rate, result.settings.steps
    _check_headline(result, obs.in_scores, obs.out_scores, q=q, steps=steps, accountant_epsilon=_dp_accounting_epsilon(SIGMA, 1e-5, q, steps))


def test_the_in_loop_auditor_reports_the_refuted_dpsgd_below_the_accountant():
    from test_opacus_copy import SIGMA, inloop_setup, train

    from privaudit.integrations.opacus_inloop import OpacusInLoopAuditor

    model, optimizer, loader = inloop_setup(SIGMA)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with OpacusInLoopAuditor(model, optimizer, canaries_per_step=20, seed=0, data_loader=loader) as auditor:
            train(model, optimizer, loader, 40)
    result = auditor.result(delta=1e-5)
    q = float(loader.sample_rate) if hasattr(loader, "sample_rate") else 1.0 / len(loader)
    _check_headline(result, *auditor.observations(), q=q, steps=40, accountant_epsilon=_dp_accounting_epsilon(SIGMA, 1e-5, q, 40))
    paired = auditor.result(delta=1e-5, test="order-statistics")  # designed for the σ read: no claim given
    assert paired.bound.method == "order-statistics" and paired.bound.claim == pytest.approx(1.0 / SIGMA)
    assert paired.end_to_end_epsilon <= _dp_accounting_epsilon(SIGMA, 1e-5, q, 40) and paired.refuted.startswith(("not DP-SGD with sigma >= ", "nothing"))


def test_the_opacus_audits_name_a_bad_test_and_a_missing_claim():
    from privaudit.integrations.opacus import audit_opacus
    from privaudit.integrations.opacus_verdict import claim_step_mu

    with pytest.raises(ValueError, match="`test` must be one of gaussian, order-statistics, got 'fdp'"):
        audit_opacus(None, None, None, None, test="fdp")  # checked before anything is read or trained
    with pytest.raises(ValueError, match="the order-statistics test needs a claim: pass `claimed_epsilon`, or train with noise"):
        claim_step_mu(None, 1e-5, sigma_read=0.0, sample_rate=None, num_steps=3)
