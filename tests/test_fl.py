"""One-shot FL: Algorithm 1 against a dense oracle and Theorem 3.3, the DP-FedAvg audit's acceptance checks, the CLI, bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import stats
from typer.testing import CliRunner

from privaudit.audits.fl.audit import AUDIT, FLAuditConfig
from privaudit.audits.fl.gaussian_mechanism import audit_gaussian_mechanism, gaussian_mechanism_cosines, gaussian_mechanism_cosines_exact_law, noise_rng
from privaudit.canaries.update import UpdateCanaries
from privaudit.cli import app
from privaudit.stats.conversions import gaussian_epsilon
from privaudit.training.fedavg import participation_schedule

SMALL = {"num_canaries": 200, "num_unobserved": 200, "training": {"num_rounds": 80, "sampling": "fixed", "noise_multiplier": 0.5}}


@pytest.mark.parametrize("budget_rows", [1, 7, 100])
def test_gaussian_mechanism_matches_a_dense_computation(budget_rows):
    k, d, sigma, seed = 30, 2000, 1.3, 4
    canaries = UpdateCanaries(k, d, seed)
    dense = np.array([canaries.direction(i) for i in range(k)])
    release = dense.sum(0) + sigma * noise_rng(seed, 1).standard_normal(d)
    expected = dense @ release / np.linalg.norm(release)
    cosines = gaussian_mechanism_cosines(k, d, sigma, seed=seed, memory_budget_bytes=budget_rows * 4 * d)
    np.testing.assert_allclose(cosines, expected, atol=1e-6)


def test_exact_law_matches_the_mechanism_run_with_vectors():
    """The Wishart shortcut draws the same law as summing real canary vectors.

    Compared run by run (cosines within a run share ρ): the mean and the spread
    of each run's cosines, over 40 runs of each, by two-sample KS tests.
    """
    k, d, sigma = 60, 2_000, 0.8
    direct = [gaussian_mechanism_cosines(k, d, sigma, seed=seed) for seed in range(40)]
    exact = [gaussian_mechanism_cosines_exact_law(k, d, sigma, seed=seed) for seed in range(40)]
    for statistic in (np.mean, np.std):
        pvalue = stats.ks_2samp([statistic(c) for c in direct], [statistic(c) for c in exact]).pvalue
        assert pvalue > 1e-3, statistic.__name__
    assert abs(np.mean([c.mean() for c in exact]) * np.sqrt(d) - 1 / sigma) < 0.1  # Thm 3.3


def test_theorem_3_3_and_reduced_table_2():
    # √d μ̂ → 1/σ and d σ̂² → 1 (One-shot Theorem 3.3); ε_est (equal variance) centres on the analytical ε
    d, k, sigma = 20_000, 200, 1.54
    audits = [audit_gaussian_mechanism(sigma, num_canaries=k, dimension=d, delta=1e-6, seed=seed) for seed in range(5)]
    mean_shift = np.mean([a.estimate.observed_mean * np.sqrt(d) for a in audits])
    assert mean_shift == pytest.approx(1 / sigma, abs=4 / np.sqrt(5 * k))
    assert np.mean([a.estimate.observed_std**2 * d for a in audits]) == pytest.approx(1.0, abs=0.15)
    estimates = np.array([a.estimate_equal_variance.epsilon for a in audits])
    analytical = gaussian_epsilon(sigma, 1e-6)
    assert abs(estimates.mean() - analytical) < 4 * estimates.std(ddof=1) / np.sqrt(estimates.size) + 0.05
    assert all(a.estimate.kind == "estimate" and a.null == "N(0, 1/d)" for a in audits)


@pytest.mark.parametrize(
    "args, message",
    [
        ((1.0, 100, 100), "`num_canaries` must be < `dimension`"),
        ((1.0, 1, 1), "`dimension` must be an integer in [2, inf)"),
        ((0.0, 5, 100), "`noise_multiplier` must be > 0, got 0"),
        ((-1.0, 5, 100), "`noise_multiplier` must be > 0, got -1"),
    ],
)
def test_gaussian_mechanism_bad_input(args, message):
    sigma, k, d = args
    with pytest.raises(ValueError) as error:
        audit_gaussian_mechanism(sigma, num_canaries=k, dimension=d)
    assert message in str(error.value)


@pytest.fixture(scope="module")
def repetitions():
    config = FLAuditConfig.from_dict({**SMALL, "participations": [1, 2, 4, 8]})
    return AUDIT.run(config).result


def test_more_participations_raise_the_final_model_estimate(repetitions):
    finals = [run.final.estimate.epsilon for run in repetitions.runs]
    assert finals == sorted(finals) and finals[0] < finals[-1]


def test_final_model_estimate_is_below_all_iterates(repetitions):
    for run in repetitions.runs:
        assert run.final.estimate.epsilon <= run.all.estimate.epsilon
        assert run.all.lower_bound.valid and run.all.estimate.kind == "estimate"
        assert run.analytical_epsilon == pytest.approx(gaussian_epsilon(0.5, 1e-5, num_steps=run.participations))


def test_canaries_change_accuracy_by_less_than_a_point(repetitions):
    changes = [abs(run.test_accuracy - run.test_accuracy_without_canaries) for run in repetitions.runs]
    assert np.mean(changes) < 0.01


def test_all_iterates_estimate_reaches_the_analytical_epsilon_at_low_noise():
    config = FLAuditConfig.from_dict({**SMALL, "measure_canary_effect": False, "training": {**SMALL["training"], "noise_multiplier": 0.3}})
    run = AUDIT.run(config).result.runs[0]
    assert run.all.estimate.epsilon >= 0.5 * run.analytical_epsilon  # ε_est-all / analytical: 2.0 at seed 0
    assert run.all.estimate.null == "fitted to null_cosines"


@pytest.mark.parametrize(
    "training", [{"sampling": "uniform", "adaptive_clipping": True}, {"sampling": "shuffled", "server_optimizer": "adam", "server_learning_rate": 0.05}]
)
def test_other_patterns_clipping_and_optimizers_run(training):
    config = FLAuditConfig.from_dict({**SMALL, "measure_canary_effect": False, "training": {"num_rounds": 40, "clients_per_round": 30, **training}})
    run = AUDIT.run(config).result.runs[0]
    assert run.canary_participations["max"] >= 1
    assert run.final.lower_bound.epsilon >= 0 and np.isfinite(run.analytical_epsilon)


@pytest.mark.parametrize("seed", range(4))
def test_no_canary_participating_is_an_error(seed):
    config = FLAuditConfig.from_dict(
        {**SMALL, "seed": seed, "measure_canary_effect": False, "training": {"num_rounds": 1, "clients_per_round": 1, "sampling": "shuffled"}}
    )
    population = 1347 // 5 + 200
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(13,)))  # the schedule's stream
    participated = (participation_schedule(population, config.training, rng)[0] >= 1347 // 5).any()
    if participated:
        AUDIT.run(config)
    else:
        with pytest.raises(ValueError, match="no canary participated"):
            AUDIT.run(config)


@pytest.mark.parametrize(
    "values, message",
    [
        ({"num_canaries": 5000, "num_unobserved": 5000}, "must be < the model dimension d = 9610"),
        ({"training": {"noise_multiplier": -0.5}}, "`noise_multiplier` must be >= 0"),
        ({"participations": [1, 2]}, "`participations` must hold one value unless sampling is 'fixed'"),
        ({"colour": 1}, "`config`: unknown keys colour"),
        ({"training": {"colour": 1}}, "`config: training`: unknown keys colour"),
    ],
)
def test_bad_configuration(values, message):
    with pytest.raises(ValueError) as error:
        FLAuditConfig.from_dict(values)
    assert message in str(error.value)


def _run(argv):
    result = CliRunner().invoke(app, [str(a) for a in argv])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_cli_writes_results_and_plots(tmp_path):
    config = tmp_path / "fl.json"
    config.write_text(json.dumps({**SMALL, "participations": [1, 2], "measure_canary_effect": False}))
    result = _run(["audit", "fl", "--config", config, "--output", tmp_path / "out", "--seed", 3, "--json"])
    assert result.exit_code == 0
    data = json.loads(result.stdout)
    assert data["seed"] == 3 and len(data["runs"]) == 2
    assert data["runs"][0]["final"]["gaussianity"]["test"].startswith("Anderson-Darling")
    for name in ("results.json", "cosines_final.png", "cosines_all.png", "epsilon_final.png", "epsilon_all.png"):
        assert (tmp_path / "out" / name).stat().st_size > 0


def test_cli_bad_input_leaves_no_output(tmp_path):
    config = tmp_path / "fl.json"
    config.write_text(json.dumps({"training": {"noise_multiplier": -1}}))
    result = _run(["audit", "fl", "--config", config, "--output", tmp_path / "out"])
    assert result.exit_code == 2
    assert not (tmp_path / "out").exists()
    assert "error: `noise_multiplier` must be >= 0" in result.output
