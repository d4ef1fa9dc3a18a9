"""The hidden-state one-run audit (`audit one-run --observe final`): canaries in every step, the final model alone read.

* the final audit parameters of the reference trainer give the same scores
  as the white-box sum of released updates (same seeds), so the hidden state
  loses nothing when canaries are Dirac and the loss ignores them;
* Monte Carlo validity on a simulated Gaussian mechanism standing in for the
  training (500 games through :func:`collect_final_model_observations`): the
  95% bound against DP-SGD composed and the test against the heuristic's pair
  land above the truth in at most 5% plus slack; with a model trained
  without the canaries both are 0 in at least 95%. The bound exceeds the
  truth exactly when the true parameter is rejected (the bisection reports
  the rejected end), so each game needs one p-value, cached by its counts;
* the CLI end to end on a tiny run, and bad input.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from scipy import stats

from privaudit.observation.one_run import collect_final_model_observations, collect_one_run_observations, draw_inclusion
from privaudit.stats.last_iterate import LastIterateDP, last_iterate_heuristic
from privaudit.stats.one_run import guess_outcomes
from privaudit.stats.one_run_nulls import DPSGD
from privaudit.stats.order_statistics import design_num_guesses, order_statistics_p_value

TRIALS, CANARIES = 500, 200
ALLOWED = int(stats.binom.ppf(0.999, TRIALS, 0.05))  # 38: P[Bin(500, 0.05) > 38] < 0.001


def test_final_parameters_give_the_white_box_sum():
    torch = pytest.importorskip("torch")
    from privaudit.canaries.gradient import GradientCanary
    from privaudit.training.dpsgd import DPSGDConfig, ReferenceDPSGD

    included = draw_inclusion(40, 0.5, seed=3)
    canary = GradientCanary(kind="dirac", moving=False, slot_size=1)
    scores = []
    for final in (False, True):
        torch.manual_seed(0)
        model = torch.nn.Linear(3, 2)
        x, y = torch.randn(50, 3, generator=torch.Generator().manual_seed(1)), torch.arange(50) % 2
        config = DPSGDConfig(noise_multiplier=1.5, sampling_rate=0.4, learning_rate=0.3)
        trainer = ReferenceDPSGD(model, x, y, config, audit_size=40, seed=5)
        common = dict(included=included, num_steps=6, clip_norm=1.0, denominator=trainer.denominator, canary=canary, canary_rate=0.5, seed=9)
        if final:
            scores.append(collect_final_model_observations(trainer.step, trainer.audit_params.copy, learning_rate=0.3, **common))
        else:
            scores.append(collect_one_run_observations(trainer.step, **common))
    # the same draws; the two differ only by float rounding of lr × update, summed and divided back (|score| ~ 10)
    assert np.allclose(scores[0], scores[1], rtol=0, atol=1e-9)
    assert np.std(scores[0][~included]) > 1.0  # noise reached them: not trivially equal


def _simulated_scores(rng, included, sigma, rate, steps, with_canaries=True):
    """A Gaussian mechanism standing in for the training: parameters descended by lr × (clipped canaries + N(0, σ²)) / B."""
    params = np.zeros(included.size)
    lr, denominator = 0.7, 13.0

    def step(rows):
        norms = np.maximum(np.linalg.norm(rows, axis=1, keepdims=True), 1.0)
        signal = (rows / norms).sum(axis=0) if with_canaries else 0.0
        params[:] -= lr * (signal + rng.normal(0.0, sigma, included.size)) / denominator

    return collect_final_model_observations(
        step,
        params.copy,
        included=included,
        num_steps=steps,
        clip_norm=1.0,
        learning_rate=lr,
        denominator=denominator,
        canary_rate=rate,
        seed=int(rng.integers(2**31)),
    )


def _rejections(nulls, sigma, rate, steps, seed, with_canaries=True, at_truth=True):
    rng = np.random.default_rng(seed)
    counts = dict.fromkeys(nulls, 0)
    plan = {}
    for name, null in nulls.items():  # the design, fixed before any data: r and the share of "in" guesses, as the audit fixes them
        r = design_num_guesses(null, sigma, CANARIES)
        plan[name] = (r, null.positive_share(1.0 / sigma, r / CANARIES))
    cache: dict = {}
    for _ in range(TRIALS):
        included = rng.random(CANARIES) < 0.5
        scores = _simulated_scores(rng, included, sigma, rate, steps, with_canaries)
        for name, null in nulls.items():
            r, share = plan[name]
            made, correct = guess_outcomes(scores, included, np.array([r]), share)
            leak = 1.0 / sigma if at_truth else null.leak_range[0]
            key = (name, int(made[0]), int(correct[0]))
            if key not in cache:
                cache[key] = order_statistics_p_value(null, leak, num_canaries=CANARIES, num_guesses=int(made[0]), num_correct=int(correct[0])) < 0.05
            counts[name] += cache[key]
    return counts


def test_hidden_state_bounds_are_valid_on_a_simulated_gaussian_mechanism():
    sigma, rate, steps = 1.0, 0.3, 5
    nulls = {"dpsgd": DPSGD(rate, steps, 1e-5), "last-iterate": LastIterateDP(rate, steps, 1e-5)}
    counts = _rejections(nulls, sigma, rate, steps, seed=11)
    assert counts["dpsgd"] <= ALLOWED and counts["last-iterate"] <= ALLOWED, counts
    assert counts["last-iterate"] >= 8, counts  # the exact pair: about 5% of games reject the truth, so the check has teeth


def test_a_model_trained_without_canaries_gives_zero_in_95_percent_of_games():
    sigma, rate, steps = 1.0, 0.3, 5
    nulls = {"dpsgd": DPSGD(rate, steps, 1e-5), "last-iterate": LastIterateDP(rate, steps, 1e-5)}
    counts = _rejections(nulls, sigma, rate, steps, seed=12, with_canaries=False, at_truth=False)
    assert max(counts.values()) <= ALLOWED, counts


def test_moving_canaries_are_refused_for_the_final_model():
    from privaudit.canaries.gradient import GradientCanary

    with pytest.raises(ValueError, match="static canary"):
        collect_final_model_observations(
            lambda rows: None, lambda: np.zeros(8), included=draw_inclusion(8, 0.5), num_steps=2, clip_norm=1.0, learning_rate=0.1,
            canary=GradientCanary(moving=True, slot_size=1),
        )  # fmt: skip


TINY = ["--canaries", "100", "--steps", "3", "--observe", "final", "--no-history"]


def test_cli_final_model_run_writes_the_heuristic_beside_the_bound(tmp_path, cli):
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    jsonschema = pytest.importorskip("jsonschema")
    from privaudit.audits.one_run.config import OneRunAuditResult
    from privaudit.schemas import load_schema

    output = tmp_path / "run"
    code, stdout, stderr = cli(["audit", "one-run", "--output", output, *TINY])
    assert code == 0, stderr
    assert "final model only" in stdout and "heuristic" in stdout
    data = json.loads((output / "results.json").read_text())
    jsonschema.Draft202012Validator(load_schema()).validate(data)
    config = data["config"]
    assert data["observe"] == "final" and config["observe"] == "final" and "hidden state" in data["threat_model"]
    expected = last_iterate_heuristic(config["noise_multiplier"], sampling_prob=1.0, num_steps=3, delta=config["delta"])
    assert data["heuristic"]["kind"] == "heuristic" and data["heuristic"]["epsilon"] == pytest.approx(expected.epsilon, rel=1e-9)
    assert data["bound_over_heuristic"] == pytest.approx(data["bound"]["epsilon"] / expected.epsilon, rel=1e-9)
    assert data["last_iterate"]["kind"] == "lower bound" and "last-iterate" in data["last_iterate"]["method"] + json.dumps(data["last_iterate"])
    assert OneRunAuditResult.from_dict(data).heuristic.epsilon == data["heuristic"]["epsilon"]
    code, _, stderr = cli(["report", output, "--output", tmp_path / "report.html"])
    assert code == 0, stderr
    assert "last-iterate heuristic" in (tmp_path / "report.html").read_text(encoding="utf-8")
    assert math.isfinite(data["bound"]["epsilon"])


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--observe", "sideways"], "`--observe` must be one of 'updates', 'final', got 'sideways'"),
        (["--observe", "final", "--threat-model", "black-box"], "`--observe` 'final' (the hidden state) needs white-box"),
    ],
)
def test_bad_observe_exits_2_with_one_line_and_no_output(flags, message, tmp_path, cli):
    code, stdout, stderr = cli(["audit", "one-run", "--output", tmp_path / "out", *flags])
    assert code == 2 and stdout == ""
    assert len(stderr.strip().splitlines()) == 1 and message in stderr, stderr
    assert not (tmp_path / "out").exists()
