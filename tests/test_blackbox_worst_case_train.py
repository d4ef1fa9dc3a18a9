"""`privaudit audit blackbox --train fn --init worst-case --init-model build`: the user's training from the auditor's crafted start.

The strongest check: privaudit's own DP-SGD written as a user's function
(tests/blackbox_user_training.py) gives, run for run, the built-in
`--init worst-case` audit's scores and the same crafted start.
"""

from __future__ import annotations

import dataclasses
import json
import uuid

import numpy as np
import pytest
from cli_helpers import assert_refused
from scipy.optimize import brentq
from scipy.stats import norm

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

import blackbox_user_training as user  # noqa: E402

from privaudit.audits.blackbox import worst_case  # noqa: E402
from privaudit.audits.blackbox.audit import GDP_PER_RUN_WARNING, run_blackbox_audit, run_configs, train_one  # noqa: E402
from privaudit.audits.blackbox.config import INIT_SCOPE, THREAT_MODEL_WORST_CASE, BlackBoxConfig  # noqa: E402
from privaudit.audits.registry import get_audit  # noqa: E402
from privaudit.models.classifiers import build_classifier  # noqa: E402
from privaudit.runner import RunStore  # noqa: E402

MODULE = user.__name__
BUILTIN = BlackBoxConfig(**user.SETTINGS, init="worst-case")


def _user(train: str = "train_dpsgd", build: str = "build", **changes) -> BlackBoxConfig:
    return BlackBoxConfig(**{**user.SETTINGS, **changes}, init="worst-case", train=f"{MODULE}:{train}", init_model=f"{MODULE}:{build}")


def _fresh_craft(config: BlackBoxConfig) -> worst_case.CraftedInit:
    worst_case._craft.cache_clear()  # craft again, as a new worker process would
    return worst_case.craft_initial_state(config)


def _scores(runs) -> dict[int, float]:
    return {index: result["score"] for index, result in RunStore(runs).load_all().items()}


def test_privaudits_own_dpsgd_as_a_user_function_gives_the_builtin_audits_scores_run_for_run(tmp_path):
    builtin = run_blackbox_audit(BUILTIN, tmp_path / "builtin", max_workers=1)
    own = run_blackbox_audit(_user(), tmp_path / "user", max_workers=1)
    # the same start: the builder gets init_seed(seed), as the built-in crafting's build_classifier does
    assert own.initialisation.digest == builtin.initialisation.digest
    assert own.initialisation.model == f"{MODULE}:build" and builtin.initialisation.model == ""
    # each run's user function gets seed = the run's noise seed, the seed the built-in ReferenceDPSGD draws from;
    # the built-in's model seed only draws random weights the crafted start overwrites, so every score is equal to the bit
    expected, got = _scores(tmp_path / "builtin"), _scores(tmp_path / "user")
    assert len(expected) == 2 * user.SETTINGS["num_models_per_side"] and got == expected
    assert len(set(got.values())) > 2  # the runs differ: the noise moves the canary's score (the comparison can fail)
    assert (own.epsilon_lower_bound, own.mean_in_score, own.mean_out_score) == (builtin.epsilon_lower_bound, builtin.mean_in_score, builtin.mean_out_score)
    assert own.threat_model == THREAT_MODEL_WORST_CASE and own.initialisation.scope == INIT_SCOPE
    assert own.to_dict()["initialisation"]["model"] == f"{MODULE}:build" and "model" not in builtin.to_dict()["initialisation"]
    # the headline assumes each run is mu-GDP: privaudit's full-batch DP-SGD is; a user's pipeline is warned of it
    assert GDP_PER_RUN_WARNING in own.sanity_warnings and GDP_PER_RUN_WARNING not in builtin.sanity_warnings
    # the built-in DP-SGD's accounting is its claim; a user's training never ran at the config's σ and steps, so it has none
    mu = np.sqrt(BUILTIN.num_steps) / BUILTIN.noise_multiplier  # T full-batch Gaussian steps: mu-GDP; its exact eps(delta) (Balle and Wang)
    exact = brentq(lambda e: norm.cdf(-e / mu + mu / 2) - np.exp(e) * norm.cdf(-e / mu - mu / 2) - BUILTIN.delta, 0.0, 100.0, xtol=1e-12)
    assert builtin.claimed_epsilon == pytest.approx(exact, rel=1e-3)
    assert own.claimed_epsilon is None and own.to_dict()["claimed_epsilon"] is None and own.claim_verdict is None


def test_a_zero_step_function_scores_the_crafted_start_as_computed_independently():
    config = _user("train_zero_steps")
    crafted = worst_case.craft_initial_state(config)
    # independently: the built-in architecture at the crafted parameters, the mislabelled canary's negated cross-entropy
    model = build_classifier("mlp", input_dim=user.FEATURES, num_classes=user.CLASSES, seed=123)
    model.load_state_dict({name: torch.from_numpy(value) for name, value in crafted.state.items()})
    split = worst_case.dataset_split(config.dataset, config.seed)
    canary_x, canary_y = np.asarray(split.x_test[0], dtype=np.float32), int((split.y_test[0] + 1) % split.num_classes)
    with torch.no_grad():
        loss = torch.nn.functional.cross_entropy(model(torch.from_numpy(canary_x)[None]).double(), torch.tensor([canary_y]))
    for run in run_configs(config)[:2]:  # with and without the canary: no training, the same score
        assert train_one(run)["score"] == pytest.approx(-float(loss), abs=1e-12)


def test_the_state_dicts_dtypes_are_kept_and_a_class_constructor_builds():
    config = _user("train_batchnorm", "WithBatchNorm")
    crafted = _fresh_craft(config)
    assert crafted.state["norm.num_batches_tracked"].dtype == np.int64 and crafted.state["norm.num_batches_tracked"] == worst_case.PRETRAIN_STEPS
    assert crafted.state["linear.weight"].dtype == np.float32
    assert worst_case.state_digest(crafted.state) == crafted.record.digest
    assert np.isfinite(train_one(run_configs(config)[0])["score"])


def test_a_user_that_writes_into_init_state_changes_no_other_runs_start():
    config = _user("train_mutating")
    digest = worst_case.craft_initial_state(config).record.digest
    first, second = (train_one(run) for run in run_configs(config)[:2])
    assert worst_case.state_digest(worst_case.craft_initial_state(config).state) == digest
    assert train_one(run_configs(config)[0]) == first and np.isfinite(second["score"])


def test_a_function_that_ignores_init_state_is_refused():
    with pytest.raises(ValueError, match="run 0: `--train` '.*:train_ignoring_init_state' never read `init_state`; load it into the model before training"):
        train_one(run_configs(_user("train_ignoring_init_state"))[0])


def test_a_returned_model_of_other_shapes_is_refused():
    with pytest.raises(ValueError, match="run 0: the model `--train` .* returned is not the one `--init-model` .* builds"):
        train_one(run_configs(_user("train_other_shapes"))[0])


def test_a_returned_object_that_is_not_a_module_is_refused():
    with pytest.raises(ValueError, match="must return the torch.nn.Module that `--init-model` .* builds, got function"):
        train_one(run_configs(_user("train_returning_a_function"))[0])


def test_a_worker_refuses_a_start_of_another_digest():
    with pytest.raises(RuntimeError, match="digest"):
        train_one(dict(run_configs(_user("train_zero_steps"))[0], init_digest="0" * 64))


@pytest.mark.parametrize(
    ("train", "build", "match"),
    [
        ("train_without_init_state", "build", "must accept (x_train, y_train, *, seed, init_state) under `--init` worst-case"),
        ("train_dpsgd", "build_not_module", "`--init-model` 'blackbox_user_training:build_not_module' must build a torch.nn.Module, got function"),
        ("train_dpsgd", "build_wrong_shape", "must build a torch.nn.Module returning logits of shape (n, 2) for a float32 batch (n, 30), got shape (468, 3)"),
        ("train_dpsgd", "build_needs_arguments", "must be callable as build() or build(*, seed)"),
    ],
)
def test_bad_functions_are_refused_before_any_run_and_leave_no_folder(tmp_path, train, build, match):
    worst_case._craft.cache_clear()
    with pytest.raises(ValueError) as error:
        get_audit("blackbox").run(_user(train, build), checkpoints=tmp_path / "out" / "runs")
    assert match in str(error.value) and ("--train" in str(error.value) or "--init-model" in str(error.value))
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"init": "worst-case", "train": "m:fn"}, "`init` 'worst-case' (--init) with `train` (--train) needs `init_model` (--init-model)"),
        ({"train": "m:fn", "init_model": "m:build"}, "`init_model` (--init-model) builds the start of your own training; it needs `init` 'worst-case'"),
        ({"init": "worst-case", "init_model": "m:build"}, "it needs `init` 'worst-case' (--init) and `train` (--train)"),
        ({"init": "worst-case", "train": "m:fn", "init_model": "m.build"}, "`init_model` must be 'package.module:callable', got 'm.build'"),
    ],
)
def test_init_model_goes_with_worst_case_and_train_only(kwargs, match):
    with pytest.raises(ValueError) as error:
        BlackBoxConfig(**kwargs)
    assert match in str(error.value)


def test_an_unseeded_builder_is_seeded_inside_fork_rng_and_leaves_the_global_rng_as_it_was():
    config = _user("train_zero_steps", "build_unseeded")
    torch.manual_seed(987)
    before = torch.get_rng_state()
    first = _fresh_craft(config)
    assert torch.equal(torch.get_rng_state(), before)
    torch.manual_seed(654)  # another global state: the same start, the init seed's alone
    assert _fresh_craft(config).record.digest == first.record.digest
    assert _fresh_craft(dataclasses.replace(config, seed=4)).record.digest != first.record.digest  # the seed matters (the test can fail)


def test_a_builder_that_takes_a_seed_is_called_with_the_init_seed():
    user.CALLS.clear()
    crafted = _fresh_craft(_user("train_zero_steps", "build_recording"))
    assert user.CALLS and all(call == {"seed": worst_case.init_seed(user.SETTINGS["seed"])} for call in user.CALLS)
    assert crafted.record.seed == worst_case.init_seed(user.SETTINGS["seed"])


def test_a_second_call_reuses_every_run_and_an_edited_builder_retrains(tmp_path, monkeypatch):
    module = f"builder_{uuid.uuid4().hex}"
    source = tmp_path / f"{module}.py"
    source.write_text(
        "from privaudit.models.classifiers import build_classifier\n\n\ndef build(*, seed):\n"
        "    return build_classifier('mlp', input_dim=30, num_classes=2, seed=seed)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    config = dataclasses.replace(_user("train_zero_steps"), init_model=f"{module}:build")
    assert run_configs(config)[0]["inputs"]["init-model"]  # the builder's source is in every run's key
    first = run_blackbox_audit(config, tmp_path / "runs", max_workers=1)
    again = run_blackbox_audit(config, tmp_path / "runs", max_workers=1)
    assert (first.num_trained, again.num_trained, again.resume_note) == (10, 0, "")
    source.write_text(source.read_text(encoding="utf-8") + "# edited\n", encoding="utf-8")
    edited = run_blackbox_audit(config, tmp_path / "runs", max_workers=1)
    assert edited.num_trained == 10 and "--init-model's code" in edited.resume_note, edited.resume_note


def test_cli_runs_the_users_training_from_the_worst_case_start_and_refuses_a_bad_combination_in_one_line(cli, tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(user.SETTINGS), encoding="utf-8")
    argv = ["audit", "blackbox", "--config", config, "--train", f"{MODULE}:train_zero_steps", "--init", "worst-case", "--init-model", f"{MODULE}:build"]
    code, out, err = cli([*argv, "--output", tmp_path / "out", "--no-history", "--workers", "1"])
    assert code == 0, err
    data = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    assert data["initialisation"]["model"] == f"{MODULE}:build" and data["initialisation"]["digest"] == worst_case.craft_initial_state(BUILTIN).record.digest
    assert data["threat_model"] == THREAT_MODEL_WORST_CASE and "which is what a DP claim covers" in out
    assert data["claimed_epsilon"] is None and "accountant's ε" not in out  # no number for a mechanism that did not run
    # without a claim, the built-in's σ and steps design the paired test (√T/σ), so they stay in the record; its model's settings did not run
    assert data["config"]["noise_multiplier"] == user.SETTINGS["noise_multiplier"] and "learning_rate" not in data["config"]
    code, out, err = cli([*argv, "--claimed-epsilon", "4", "--output", tmp_path / "claimed", "--no-history", "--workers", "1"])
    assert code == 0, err
    claimed = json.loads((tmp_path / "claimed" / "results.json").read_text(encoding="utf-8"))
    # with a claim, the claim designs the test: σ and steps touched nothing that ran, and results.json leaves them out
    assert claimed["config"]["claimed_epsilon"] == 4.0 and not {"noise_multiplier", "num_steps"} & set(claimed["config"])
    no_worst_case = [*argv[:6], "--init-model", f"{MODULE}:build", "--output", tmp_path / "bad"]
    assert_refused(no_worst_case, tmp_path / "bad", "`--init-model` builds the start of your own training; it needs `--init` 'worst-case' and `--train`")
    assert_refused([*argv[:6], "--init", "worst-case", "--output", tmp_path / "bad"], tmp_path / "bad", "needs `--init-model`")
