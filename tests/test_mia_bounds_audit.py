"""The mia audit's bound modes with real training: a DP-SGD target (Opacus, ε = 1) from the command line, an overfitted MLP, and refused input.

Each figure the audit reports is recomputed here from the models' stored
signals and the seed's draws: every attack with :mod:`privaudit.stats.mia`
directly, on the target and on each reference scored as a target by the
others, the AUC with scikit-learn, the choice of attack and guess rule on
those replicas with :func:`~privaudit.audits.mia.guesses.choose_rule`
(itself checked against a brute force in ``test_mia_bounds.py``), and the
bound on every slot by counting its guesses with numpy and
:func:`privaudit.stats.one_run.epsilon_one_run` (Steinke et al.'s test, one
test).
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli
from sklearn.metrics import roc_auc_score

from privaudit.audits.mia.audit import AUDIT, run_mia_audit
from privaudit.audits.mia.bounds import draw_design
from privaudit.audits.mia.config import MIAConfig
from privaudit.audits.mia.guesses import choose_rule
from privaudit.audits.mia.training import load_pool
from privaudit.runner import RunStore
from privaudit.stats.mia import lira_offline_scores, lira_online_scores, loss_scores, rmia_log_ratios
from privaudit.stats.one_run import epsilon_one_run

pytest.importorskip("sklearn")


def _attacks(reference, membership, config):
    """Each attack of a model's signals on the audited records, calibrated by ``reference`` (k, a) trained on ``membership``."""
    return {
        "loss": lambda own: loss_scores(own),
        "lira-online": lambda own: lira_online_scores(own, reference, membership, global_variance=True),
        "lira-offline": lambda own: lira_offline_scores(own, reference, membership, global_variance=True),
        "rmia-online": lambda own: rmia_log_ratios(own, reference, membership),
        "rmia-offline": lambda own: rmia_log_ratios(own, reference, membership, offline_a=config.offline_a),
    }


def recomputed(directory, config: MIAConfig):
    """(every attack's scores (T, a), coins (T, a), every attack's replica scores (k, a), the references' membership (k, a)), from the stored signals."""
    pool = load_pool(config.dataset, config.data, config.label_col)
    num_population = int(round(config.population_fraction * len(pool.y)))
    trials = 1 if config.mode == "canary" else config.num_trial_models
    design = draw_design(
        config.seed,
        pool.y,
        mode=config.mode,
        num_references=config.num_references,
        num_population=num_population,
        num_canaries=config.num_canaries,
        num_trial_models=config.num_trial_models,
    )
    store = RunStore(directory)
    signals = np.array([store.load(index)["signals"] for index in range(config.num_references + trials)])
    k, x = config.num_references, design.audited
    reference, membership = signals[:k, x], design.references[:, x]
    attacks = _attacks(reference, membership, config)
    scores = {name: np.array([attack(own[x]) for own in signals[k:]]) for name, attack in attacks.items()}
    replicas: dict[str, list] = {name: [] for name in attacks}
    for index in range(k):  # each reference scored as a target by the other k - 1
        others = np.arange(k) != index
        for name, attack in _attacks(reference[others], membership[others], config).items():
            replicas[name].append(attack(reference[index]))
    return scores, design.trials[:, x], {name: np.array(rows) for name, rows in replicas.items()}, membership


def expected_bound(scores, coins, replicas, answers, config):
    """(attack, low, high, bound): the rule chosen on the replicas, placed by the target's scores, its guesses counted here."""
    chosen, _ = choose_rule(replicas, answers, num_slots=coins.size, confidence=config.confidence)
    values, member = scores[chosen.attack].ravel(), coins.ravel()
    rule = chosen.place(values)
    inside, outside = values > rule.high, values < rule.low
    made, right = int(inside.sum() + outside.sum()), int((inside & member).sum() + (outside & ~member).sum())
    bound = epsilon_one_run(values.size, made, right, delta=config.delta, confidence=config.confidence).epsilon
    return chosen.attack, rule.low, rule.high, bound


#: The DP target's AUC may differ from 1/2 by this many null standard errors (5 SE = 0.17 with 300 canaries).
#: A 1-DP training is not a null mechanism: its canaries' AUC may reach e/(1 + e) = 0.73 (the area under the
#: ROC of randomized response at ε = 1). Over 19 runs of this training (seeds 0-10, three batch/epoch settings,
#: 300 canaries) it averaged 0.54 with a spread (standard deviation) of 0.04 between runs, the largest 4.1 SE from 1/2; 5 SE covers that
#: small real leak and the sampling error, while the overfitted MLP's AUC (0.97-1.0) lies 14 SE away.
AUC_TOLERANCE_SE = 5.0


def null_auc_standard_error(num_in: int, num_out: int) -> float:
    """Standard deviation of the Mann–Whitney AUC when scores do not depend on membership: √((n₁ + n₀ + 1) / (12 n₁ n₀))."""
    return math.sqrt((num_in + num_out + 1) / (12 * num_in * num_out))


@pytest.fixture(scope="module")
def dp_run(tmp_path_factory):
    """`privaudit audit mia --mode canary` on a user's Opacus DP-SGD training at ε = 1 (300 canaries, 4 references)."""
    pytest.importorskip("opacus")
    output = tmp_path_factory.mktemp("dp") / "out"
    argv = ["audit", "mia", "--mode", "canary", "--train", "own_models.dp_mlp:train_dp", "--canaries", "300", "--references", "4", "--seed", "2"]
    code, stdout, stderr = run_cli([*argv, "--output", output, "--no-history", "--workers", "1"])
    assert code == 0, stderr
    return output, stdout


def test_dp_target_bound_stays_below_its_epsilon_and_auc_near_half(dp_run):
    output, stdout = dp_run
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    config = AUDIT.config_from_dict(data["config"])
    every, coins, replicas, answers = recomputed(output / "runs", config)
    scores = every["rmia-online"]
    bound = data["bound"]
    # the reported bound is Steinke et al.'s test on all 300 canaries, by the attack and rule best on the 4 references, recomputed here
    attack, low, high, expected = expected_bound(every, coins, replicas, answers, config)
    chosen = data["bound_design"]
    assert (chosen["attack"], chosen["num_replicas"], chosen["num_bounded"]) == (attack, 4, 300)
    assert (chosen["low"], chosen["high"]) == pytest.approx((low, high), abs=1e-9)
    assert bound["epsilon"] == pytest.approx(expected, abs=1e-9) and bound["num_canaries"] == 300
    assert bound["epsilon"] < 1.0  # training is 1-DP at δ = 1e-5: a valid bound cannot pass 1 (except at rate 5%, the bound's own risk)
    # AUC near 1/2: within AUC_TOLERANCE_SE standard errors of it (see the constant), and the overfitted MLP's is far outside
    auc = roc_auc_score(coins.ravel(), scores.ravel())
    rmia = next(item for item in data["attacks"] if item["attack"] == "rmia-online")
    assert rmia["auc"] == pytest.approx(auc, abs=1e-9)
    assert abs(auc - 0.5) < AUC_TOLERANCE_SE * null_auc_standard_error(int(coins.sum()), int((~coins).sum()))
    # results.json, the report and the printed table say what the number is
    assert data["mode"] == "canary" and "one training run" in data["threat_model"] and "mislabeled canaries" in data["threat_model"]
    headline = AUDIT.result_from_dict(data).headline()
    assert (
        headline.kind == "lower bound"
        and headline.confidence == 0.95
        and "300 canaries" in headline.label
        and "chosen on the 4 reference models" in headline.label
        and "δ = 1e-05" in headline.label
    )
    report = (output / "report.html").read_text(encoding="utf-8")
    assert "ε lower bound (canary mode" in stdout and "ε lower bound (canary mode" in report and "mislabeled canaries, each included by a fair coin" in report
    assert "not (ε, δ)-DP for any ε below the bound" in report and "not a bound on ε" not in report  # the page reads the bound as one
    conventions = {item["name"]: item for item in data["conventions"]}
    assert conventions["bound δ"]["value"] == "1e-05" and conventions["bound δ"]["decided"] == "default"
    assert conventions["audited records"]["value"] == "300 mislabeled pool records" and conventions["output kind"]["value"] == "logits"


def test_overfitted_mlp_gives_a_clearly_positive_canary_bound(tmp_path):
    # an MLP fitted to every label, wrong ones too: seeds 0-2 gave 1.9-2.5 with 100-200 canaries
    config = MIAConfig(mode="canary", train="own_models.dp_mlp:train_overfit", num_canaries=100, num_references=4, seed=1)
    run = run_mia_audit(config, tmp_path, max_workers=1)
    every, coins, replicas, answers = recomputed(tmp_path, config)
    scores = every["rmia-online"]
    attack, _, _, expected = expected_bound(every, coins, replicas, answers, config)
    assert run.result.bound_design.attack == attack and run.result.bound.epsilon == pytest.approx(expected, abs=1e-9)
    assert run.result.bound.epsilon > 0.5 and run.result.headline().value == run.result.bound.epsilon
    # the AUC check of the DP target can fail: this training's AUC is far outside its tolerance
    auc = roc_auc_score(coins.ravel(), scores.ravel())
    assert auc - 0.5 > AUC_TOLERANCE_SE * null_auc_standard_error(int(coins.sum()), int((~coins).sum()))
    assert run.result.num_records == 100 and run.result.num_members == int(coins.sum())


def test_leave_one_out_pools_every_trial_models_slots(tmp_path):
    # the built-in overfitted MLP on a small pool: 3 trial models × 240 records outside z (seeds 0-4 all pass)
    pool = load_pool("digits", None, None)
    np.savez(tmp_path / "pool.npz", x=pool.x[:400], y=pool.y[:400])
    config = MIAConfig(mode="leave-one-out", data=str(tmp_path / "pool.npz"), epochs=100, num_references=4, num_trial_models=3, seed=4)
    run = run_mia_audit(config, tmp_path / "runs", max_workers=1)
    every, coins, replicas, answers = recomputed(tmp_path / "runs", config)
    # every slot of the 3 models × 240 records outside z is bounded
    assert coins.shape == (3, 240) and run.result.bound.num_canaries == 720 and run.result.num_trained == 7
    attack, _, _, expected = expected_bound(every, coins, replicas, answers, config)
    assert run.result.bound_design.attack == attack
    assert run.result.bound.epsilon == pytest.approx(expected, abs=1e-9) and run.result.bound.epsilon > 0.5, run.result.bound.epsilon
    assert "3 trial models" in run.result.headline().label and "never trial models" in run.result.threat_model


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--mode", "bound"], "`--mode` must be one of 'attack', 'canary', 'leave-one-out', got 'bound'"),
        (["--mode", "canary", "--canaries", "5"], "`--canaries` must be an integer in [20, inf), got 5"),
        (["--mode", "canary", "--canaries", "600"], "`--canaries` must be an integer in [20, 539], got 600"),
        (["--mode", "leave-one-out", "--trial-models", "0"], "`--trial-models` must be an integer in [1, inf), got 0"),
        (["--mode", "canary", "--delta", "1.5"], "`--delta` must be in (0, 1)"),
        (["--mode", "canary", "--model", "model.skops", "--members", "members.txt"], "`--mode` 'canary' draws membership by fair coins"),
        (["--mode", "canary", "--train", "own_models.relu_net:train_no_seed"], "must accept (x_train, y_train, *, seed)"),
    ],
)
def test_bad_bound_settings_are_refused_before_any_training(tmp_path, flags, match):
    output = tmp_path / "out"
    assert_refused(["audit", "mia", *flags, "--output", output, "--no-history"], output, match)


def test_a_killed_bound_run_resumes_with_identical_numbers_and_no_global_rng_drawn(tmp_path):
    import shutil

    from rng_helpers import assert_same_rng_states, global_rng_states

    pool = load_pool("digits", None, None)
    np.savez(tmp_path / "pool.npz", x=pool.x[:400], y=pool.y[:400])
    config = MIAConfig(
        mode="leave-one-out", data=str(tmp_path / "pool.npz"), train="own_models.relu_net:train_torch", num_references=4, num_trial_models=2, delta=1e-6
    )
    before = global_rng_states()
    full = run_mia_audit(config, tmp_path / "full", max_workers=1).result
    assert_same_rng_states(before, global_rng_states())
    shutil.copytree(tmp_path / "full", tmp_path / "killed")
    for index in (1, 5):  # a reference and a trial model were not finished
        RunStore(tmp_path / "killed").path(index).unlink()
    resumed = run_mia_audit(config, tmp_path / "killed", max_workers=1).result
    assert full.num_trained == 6 and resumed.num_trained == 2
    assert resumed.bound == full.bound and resumed.attacks == full.attacks and resumed.seeds == full.seeds
    conventions = {item.name: item for item in full.conventions}
    assert conventions["bound δ"].decided == "explicit" and conventions["bound δ"].value == "1e-06" and full.bound.delta == 1e-6
