"""`privaudit audit one-run`: a tiny run end to end, the recorded inclusion draw, validity on null data, bad input → exit 2 with one line."""

from __future__ import annotations

import json

import numpy as np
import pytest

from privaudit.audits.one_run.audit import AUDIT, one_run_bounds, run_one_run_audit
from privaudit.audits.one_run.config import OneRunAuditConfig, OneRunAuditResult
from privaudit.observation.one_run import collect_one_run_observations, draw_inclusion
from privaudit.schemas import load_schema
from privaudit.stats.conversions import gdp_epsilon

pytest.importorskip("torch")
pytest.importorskip("sklearn")
jsonschema = pytest.importorskip("jsonschema")

TINY = ["--canaries", "100", "--steps", "3"]


@pytest.fixture(scope="module")
def tiny_run():
    return AUDIT.run(AUDIT.tiny_config())


@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """`privaudit audit one-run --output D` without --config, made quick by flags: (exit code, stdout, stderr, D)."""
    from typer.testing import CliRunner

    from privaudit.cli import app

    output = tmp_path_factory.mktemp("one-run") / "run"
    try:
        runner = CliRunner(mix_stderr=False)
    except TypeError:
        runner = CliRunner()
    result = runner.invoke(app, ["audit", "one-run", "--output", str(output), "--no-history", *TINY])
    return result.exit_code, result.stdout, result.stderr, output


def test_tiny_config_runs_and_reports_every_bound_side_by_side(tiny_run):
    result = tiny_run.result
    assert isinstance(result, OneRunAuditResult) and result.config == AUDIT.tiny_config()
    assert set(result.side_by_side()) == {"steinke", "fdp_gdp", "gaussian", "headline"}  # full batch: no PLD family
    assert result.bound.methods == ("order-statistics",) and result.gaussian.exact and result.gaussian.kind == "lower bound"
    assert result.num_canaries == 100 == len(result.observations) == len(result.included)
    assert result.claimed_epsilon == pytest.approx(float(gdp_epsilon(np.sqrt(3) / result.config.noise_multiplier, 1e-5)), rel=1e-3)
    assert result.headline().value == result.bound.epsilon and result.headline().label.startswith("end-to-end")


def test_inclusion_draw_is_recorded_and_reproducible_from_its_seed(tiny_run):
    result = tiny_run.result
    included = draw_inclusion(result.num_canaries, result.config.inclusion_prob, result.inclusion_seed)
    assert tuple(included.tolist()) == result.included and result.num_in == int(included.sum())
    assert included.tolist() == (np.random.default_rng(result.inclusion_seed).random(result.num_canaries) < 0.5).tolist()
    again = run_one_run_audit(AUDIT.tiny_config())
    assert again.included == result.included and again.observations == result.observations
    other = run_one_run_audit(AUDIT.with_seed(AUDIT.tiny_config(), 1))
    assert other.inclusion_seed != result.inclusion_seed and other.included != result.included


def test_results_round_trip_and_validate(tiny_run, tmp_path):
    from privaudit.report.runs import write_run

    data = write_run(tmp_path / "run", tiny_run)
    jsonschema.Draft202012Validator(load_schema()).validate(data)
    assert OneRunAuditResult.from_dict(tiny_run.result.to_dict()) == tiny_run.result
    assert AUDIT.result_from_dict(json.loads((tmp_path / "run" / "results.json").read_text())) == tiny_run.result
    assert {"bounds.png", "observations.png"} <= {path.name for path in (tmp_path / "run").iterdir()}
    broken = dict(data, included="yes")
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(load_schema()).validate(broken)


def test_cli_without_config_writes_valid_results_that_report_renders(cli_run, tmp_path, cli):
    code, stdout, stderr, output = cli_run
    assert code == 0, stderr
    assert "One-run audit (white-box" in stdout and "Gaussian" in stdout
    data = json.loads((output / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema()).validate(data)
    assert data["audit"] == "one-run" and data["num_canaries"] == 100 and data["config"]["num_steps"] == 3
    assert OneRunAuditResult.from_dict(data).to_dict()["observations"] == data["observations"]
    code, _, stderr = cli(["report", output, "--output", tmp_path / "report.html"])
    assert code == 0, stderr
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "One-run audit of DP-SGD" in page and "end-to-end" in page and "inclusion draw" in page


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--canaries", "3"], "`--canaries` must be an integer in [4, inf), got 3"),
        (["--inclusion-prob", "1.5"], "`--inclusion-prob` must be in (0, 1), got 1.5"),
        (["--inclusion-prob", "0"], "`--inclusion-prob` must be in (0, 1), got 0"),
        (["--threat-model", "grey-box"], "`--threat-model` must be one of 'white-box', 'black-box', got 'grey-box'"),
        (["--train", "own_models.relu_net:train_memoriser"], "`--train` needs threat_model 'black-box'"),
        (["--threat-model", "black-box", "--inclusion-prob", "0.3"], "`--inclusion-prob` must be 0.5 here"),
    ],
)
def test_bad_input_exits_2_with_one_line_and_no_output(flags, message, tmp_path, cli):
    code, stdout, stderr = cli(["audit", "one-run", "--output", tmp_path / "out", *flags])
    assert code == 2 and stdout == ""
    assert len(stderr.strip().splitlines()) == 1 and stderr.startswith("error: ") and message in stderr
    assert not (tmp_path / "out").exists()


def test_bad_methods_are_refused():
    with pytest.raises(ValueError, match="'gaussian' needs threat_model 'white-box'"):
        OneRunAuditConfig(threat_model="black-box", methods=("steinke", "gaussian"))
    with pytest.raises(ValueError, match="'gaussian' is exact only with canaries in every step"):
        OneRunAuditConfig(sampling_rate=0.05, methods=("gaussian",))
    with pytest.raises(ValueError, match="need inclusion_prob 0.5"):
        OneRunAuditConfig(inclusion_prob=0.3, methods=("steinke", "gaussian"))
    assert OneRunAuditConfig(inclusion_prob=0.3).headline_methods == ("gaussian",)


def _gaussian_release(sigma: float, seed: int):
    """The Gaussian mechanism on clipped rows (C = 1): what the reference DP-SGD releases on the audit coordinates, times the denominator."""
    rng = np.random.default_rng([seed, 17])

    def release(rows):
        return (rows / np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)).sum(axis=0) + rng.normal(0.0, sigma, rows.shape[1])

    return release


def _bounds(sigma: float, seed: int, *, m: int = 200, steps: int = 5) -> dict:
    included = draw_inclusion(m, 0.5, seed)
    scores = collect_one_run_observations(_gaussian_release(sigma, seed), included=included, num_steps=steps, clip_norm=1.0, seed=seed)
    bounds = one_run_bounds(scores, included, delta=1e-5, methods=("steinke", "fdp", "gaussian"), gaussian=True)
    return {name: bound.epsilon for name, bound in bounds.items() if bound is not None}


def test_huge_noise_gives_zero_bounds_in_95_percent_of_runs():
    runs = [_bounds(1e5, seed) for seed in range(40)]
    for name in ("steinke", "fdp_gdp", "gaussian", "bound"):
        zero = sum(run[name] == 0.0 for run in runs)
        assert zero >= 38, f"{name}: positive in {40 - zero} of 40 null runs"


def test_little_noise_gives_positive_bounds_below_the_truth():
    """The check above can fail: the same pipeline finds leakage when there is some, and stays below the true ε."""
    sigma, steps = 1.0, 5  # each canary's mechanism is exactly sqrt(5)-GDP
    truth = float(gdp_epsilon(np.sqrt(steps) / sigma, 1e-5))
    runs = [_bounds(sigma, 100 + seed, steps=steps) for seed in range(20)]
    assert all(run["bound"] > 0.0 for run in runs)
    for name in ("steinke", "fdp_gdp", "gaussian", "bound"):  # a valid 95% bound exceeds the truth in 1 of 20 runs on average
        assert sum(run[name] > truth for run in runs) <= 3, name


def test_black_box_runs_with_the_users_training_function(cli, tmp_path):
    flags = ["--threat-model", "black-box", "--canaries", "200", "--train", "own_models.relu_net:train_memoriser"]
    code, stdout, stderr = cli(["audit", "one-run", "--output", tmp_path / "run", "--no-history", "--json", *flags])
    assert code == 0, stderr
    data = json.loads(stdout)
    assert data["gaussian"] is None and data["bound"]["methods"] == ["steinke", "fdp"] and data["test_accuracy"] is None
    assert data["bound"]["epsilon"] > 1.0 and data["model"]["train"] == "own_models.relu_net:train_memoriser"  # a memoriser leaks


def test_black_box_built_in_training_at_tiny_size():
    result = run_one_run_audit(OneRunAuditConfig(threat_model="black-box", num_canaries=100, num_steps=3))
    assert result.gaussian is None and result.steinke is not None and len(result.observations) == 100
    assert all(score <= 0.0 for score in result.observations)  # log-probabilities
    assert result.model["num_train"] + result.model["num_test"] + result.num_canaries - result.num_in == 1797  # digits, canaries withheld


def test_report_holds_the_bounds_against_the_users_claim_not_the_accountants(tiny_run):
    """With --claimed-epsilon the page and figure call the user's value the claim; the accountant's ε is labelled as evidence."""
    import dataclasses

    from privaudit.report.one_run import _claim_lines, section
    from privaudit.stats.verdict import Claim, compare

    result = tiny_run.result
    assert result.claim_verdict is not None and result.claim_verdict.claim.source != "user"  # privaudit's own accountant
    own = dict(section(result.to_dict(), None).details)
    assert own["claimed ε of the run (accountant)"] == result.claimed_epsilon and _claim_lines(result)["user_claim"] is None
    claim = Claim(epsilon=result.claimed_epsilon / 3, delta=result.config.delta)
    verdict = compare(result.bound.epsilon, bound_delta=result.config.delta, quantity="end-to-end", claim=claim)
    claimed = dataclasses.replace(result, claim_verdict=verdict)
    details = dict(section(claimed.to_dict(), None).details)
    assert "claimed ε of the run (accountant)" not in details
    assert details["accountant's ε for the settings (evidence)"] == result.claimed_epsilon
    assert _claim_lines(claimed) == {"claim_label": "accountant's ε of the settings", "user_claim": pytest.approx(result.claimed_epsilon / 3)}
    assert details["test accuracy"] == result.test_accuracy


def test_white_box_headline_tests_the_runs_own_dpsgd_family_like_for_like(tiny_run):
    """Canaries in every step: T steps at noise σ are (√T/σ)-GDP; the null refuted is named and the claim is compared in that family."""
    from privaudit.stats.families import GaussianDP

    result, config = tiny_run.result, tiny_run.result.config
    mu = np.sqrt(config.num_steps) / config.noise_multiplier
    assert result.bound.method == "order-statistics" and result.bound.family == "gdp" and result.bound.parameter_name == "mu"
    assert result.bound.refuted == "nothing refuted" or result.bound.refuted.startswith("not mu-GDP with mu <= ")  # tiny run: little signal
    assert result.bound.num_tests == 1 and result.ceiling is not None and result.ceiling.value == result.bound.ceiling
    verdict = result.claim_verdict
    assert verdict is not None and verdict.conversion.startswith("the claim as DP-SGD: noise sigma >= ")
    assert verdict.claim.epsilon == GaussianDP(config.delta).epsilon(mu)  # the claim's own curve, by the same code as the bound
    assert verdict.claim.epsilon == pytest.approx(result.canary_epsilon, rel=1e-3)  # = the accountant's ε (exact GDP)
    assert verdict.flagged == (result.bound.parameter is not None and result.bound.parameter > mu) and "one test" in result.headline().label


def _family_headline(config: OneRunAuditConfig, mu: float, *, seed: int = 0, m: int = 400, accountant: float | None = None):
    """The family test on simulated white-box sums: canaries exactly mu-GDP (in: mean mu, out: mean 0, unit noise)."""
    from privaudit.audits.one_run.audit import _family_test

    rng = np.random.default_rng(seed)
    included = rng.random(m) < 0.5
    return _family_test(config, mu * included + rng.normal(size=m), included, accountant)


def test_a_users_claim_far_below_the_truth_is_refuted_in_its_family():
    """The claim's own guess count can be powerless (a tiny claim at few canaries); half the canaries is then used and the claim falls."""
    from privaudit.stats.conversions import gdp_epsilon
    from privaudit.stats.verdict import compare

    config = OneRunAuditConfig(num_steps=10, noise_multiplier=1.0, claimed_epsilon=1.0)  # truth: sqrt(10)-GDP, ε ≈ 17.9
    bound, claim, conversion = _family_headline(config, np.sqrt(10.0))
    assert "the least noise meeting ε = 1" in conversion and claim.source == "user" and claim.epsilon == pytest.approx(1.0, abs=0.01)
    assert bound.num_tests == 1 and 1.0 < bound.epsilon <= gdp_epsilon(np.sqrt(10.0), 1e-5)
    assert compare(bound.epsilon, bound_delta=1e-5, quantity="end-to-end", claim=claim).flagged


def test_a_true_claim_is_not_refuted_in_its_family():
    """privaudit's own run: the claim is the noise that ran (sqrt(10)-GDP), and the data are exactly that: refuted about 1 time in 20."""
    from privaudit.stats.conversions import gdp_epsilon

    config, claim_mu = OneRunAuditConfig(num_steps=10, noise_multiplier=1.0), np.sqrt(10.0)
    runs = [_family_headline(config, claim_mu, seed=seed, m=200, accountant=float(gdp_epsilon(claim_mu, 1e-5))) for seed in range(20)]
    assert all(bound.epsilon > 1.0 for bound, _, _ in runs)  # the test has power here ...
    assert sum(bound.parameter > claim_mu for bound, _, _ in runs) <= 3  # ... and holds at 95%


def test_subsampled_canaries_test_dpsgd_composed_and_input_canaries_keep_the_fdp_recursion():
    bound, claim, _ = _family_headline(OneRunAuditConfig(sampling_rate=0.5, num_steps=2, noise_multiplier=1.0, claimed_epsilon=2.0), 1.0)
    assert bound.refuted.startswith("not DP-SGD with sigma >= ") and "q = 0.5, T = 2" in bound.refuted and bound.family == "dpsgd"
    assert _family_headline(OneRunAuditConfig(threat_model="black-box", claimed_epsilon=2.0), 1.0) is None  # input canaries interfere
    assert _family_headline(OneRunAuditConfig(methods=("steinke", "fdp", "gaussian")), 1.0) is None  # methods asked for are kept
