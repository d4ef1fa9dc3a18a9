"""The mia audit: resumable reference training, the user's --train through the CLI, and bad input refused before any training."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli
from sklearn.metrics import roc_auc_score

from privaudit.audits.mia.audit import AUDIT, run_mia_audit
from privaudit.audits.mia.config import MIAConfig
from privaudit.audits.mia.result import attack_scores
from privaudit.audits.mia.training import draws, load_pool
from privaudit.runner import RunStore
from privaudit.stats.mia import lira_online_scores, rmia_fractions_left_out, rmia_log_ratios, rmia_scores
from privaudit.stats.mia_metrics import attack_metrics

pytest.importorskip("sklearn")

TINY = MIAConfig(num_references=4, epochs=15, seed=3)


def test_draws_put_every_record_in_half_the_references_and_never_a_population_sample_in_the_target():
    population, target, references = draws(5, 500, 6, 50)
    assert population.sum() == 50 and not (target & population).any()
    assert (references.sum(axis=0) == 3).all()  # balanced: IN exactly half
    # the target's coin: about half of the others (Binomial(450, 1/2) within 5 sd)
    assert abs(int(target.sum()) - 225) < 5 * np.sqrt(450 / 4)
    assert all(np.array_equal(a, b) for a, b in zip(draws(5, 500, 6, 50), (population, target, references), strict=True))


@pytest.fixture(scope="module")
def full_run(tmp_path_factory):
    """(the run, its store directory) of the tiny audit, every model trained by this call."""
    directory = tmp_path_factory.mktemp("full")
    return run_mia_audit(TINY, directory, max_workers=1), directory


def test_resume_retrains_no_finished_model_and_gives_identical_numbers(full_run, tmp_path):
    full, directory = full_run
    assert full.result.num_trained == TINY.num_references + 1
    # a run killed after three models: the store holds their files only
    shutil.copytree(directory, tmp_path / "killed")
    for index in (1, 4):
        RunStore(tmp_path / "killed").path(index).unlink()
    before = {index: RunStore(tmp_path / "killed").path(index).stat().st_mtime_ns for index in (0, 2, 3)}
    resumed = run_mia_audit(TINY, tmp_path / "killed", max_workers=1)
    assert resumed.result.num_trained == 2
    assert {index: RunStore(tmp_path / "killed").path(index).stat().st_mtime_ns for index in (0, 2, 3)} == before  # not rewritten
    assert resumed.result.attacks == full.result.attacks and resumed.result.most_vulnerable == full.result.most_vulnerable
    assert resumed.result.seeds == full.result.seeds


def test_reported_statistics_are_those_of_the_stored_signals(full_run):
    run, directory = full_run
    store = RunStore(directory)
    signals = np.array([store.load(index)["signals"] for index in range(TINY.num_references + 1)])
    population, target_members, membership = draws(TINY.seed, signals.shape[1], TINY.num_references, run.result.num_population)
    keep = ~population
    # recomputed here from the stored signals and the seed's draws, attack by attack, on every record (the population samples z too)
    online = lira_online_scores(signals[-1], signals[:-1], membership, global_variance=True)
    rmia = rmia_log_ratios(signals[-1], signals[:-1], membership)
    for name, scores in (("lira-online", online), ("rmia-online", rmia)):
        metrics = attack_metrics(scores, target_members)
        summary = run.result.attack(name)
        assert summary.auc == metrics.auc and summary.tpr == tuple(metrics.tpr) and summary.tpr_low == tuple(metrics.tpr_low)
        assert summary.num_out == int((~target_members).sum()) > 1000  # every non-member: enough for 0.1% FPR
    headline = run.result.headline()
    assert headline.kind == "statistic" and "not an ε bound" in headline.label and headline.value == run.result.attack("rmia-online").tpr[2]
    assert set(attack_scores(signals[-1], signals[:-1], membership, population, TINY)) == {
        "loss",
        "lira-online",
        "lira-offline",
        "rmia-online",
        "rmia-offline",
        "rmia-online fraction",
        "rmia-offline fraction",
    }
    # the most exposed records are the top of the headline attack, by their row in the pool, with the paper's fraction beside the ratio
    top = run.result.most_vulnerable[0]
    assert top.score == rmia.max() and top.member == bool(target_members[top.record])
    fraction = rmia_scores(
        signals[-1, keep], signals[:-1, keep], membership[:, keep], signals[-1, population], signals[:-1, population], membership[:, population]
    )
    ratio_z = rmia_log_ratios(signals[-1, population], signals[:-1, population], membership[:, population])
    z_index = np.cumsum(population) - 1
    expected = fraction[np.cumsum(keep)[top.record] - 1] if keep[top.record] else rmia_fractions_left_out(ratio_z)[z_index[top.record]]
    assert top.fraction == expected


@pytest.fixture(scope="module")
def pool_csv(tmp_path_factory):
    """300 digits as a CSV with a named label column in the middle."""
    pool = load_pool("digits", None, None)
    path = tmp_path_factory.mktemp("data") / "pool.csv"
    x, y = pool.x[:300], pool.y[:300]
    header = [f"f{i}" for i in range(32)] + ["digit"] + [f"f{i}" for i in range(32, 64)]
    rows = [",".join(header)] + [",".join(f"{v:g}" for v in [*row[:32], label, *row[32:]]) for row, label in zip(x, y, strict=True)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


def test_users_training_function_and_data_from_the_command_line(pool_csv, tmp_path):
    output = tmp_path / "out"
    argv = ["audit", "mia", "--data", pool_csv, "--label-col", "digit", "--train", "own_models.relu_net:train_torch", "--references", "4"]
    code, _, stderr = run_cli([*argv, "--output", output, "--no-history", "--workers", "1"])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    conventions = {item["name"]: item for item in data["conventions"]}
    assert conventions["output kind"]["value"] == "logits" and conventions["output kind"]["decided"] == "checked"
    label = conventions["label column of --data"]
    assert label["decided"] == "explicit" and label["value"].startswith("'digit'") and "--label-col" in label["evidence"]
    assert data["num_records"] == 300 and data["num_population"] == 120 and data["config"]["train"] == "own_models.relu_net:train_torch"
    assert (output / "roc.png").is_file() and (output / "vulnerability.png").is_file()
    assert AUDIT.result_from_dict(data).headline().kind == "statistic"


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--label-col", "digit", "--train", "own_models.no_such_module:fn"], "`--train`"),
        (["--label-col", "digit", "--train", "own_models.relu_net:train_no_seed"], "must accept (x_train, y_train, *, seed)"),
        (["--label-col", "digit", "--train", "own_models.relu_net:train_returns_number"], "must be a torch.nn.Module, an object with predict_proba"),
        (["--label-col", "digit", "--references", "3"], "`--references` must be an even integer >= 4, got 3"),
        (["--label-col", "nope"], "`--label-col`"),
        (["--train", "own_models.relu_net:train_torch"], "`--label-col` must name the label column of `--data`"),
    ],
)
def test_bad_input_is_refused_before_any_training(pool_csv, tmp_path, flags, match):
    output = tmp_path / "out"
    assert_refused(["audit", "mia", "--data", pool_csv, *flags, "--output", output, "--no-history"], output, match)


@pytest.fixture(scope="module")
def users_target(pool_csv, tmp_path_factory):
    """A scikit-learn MLP trained on every third row of the pool, saved with skops, and its members file."""
    skops_io = pytest.importorskip("skops.io")
    from sklearn.neural_network import MLPClassifier

    pool = load_pool("digits", None, None)
    x, y = pool.x[:300].astype(np.float64), pool.y[:300]
    rows = np.arange(0, 300, 3)
    model = MLPClassifier(hidden_layer_sizes=(32,), max_iter=300, random_state=0).fit(x[rows], y[rows])
    folder = tmp_path_factory.mktemp("target")
    skops_io.dump(model, folder / "model.skops")
    (folder / "members.txt").write_text("\n".join(map(str, rows)) + "\n", encoding="utf-8")
    return model, x, y, rows, folder


def test_users_own_target_model_and_members(pool_csv, users_target, tmp_path):
    model, x, y, rows, folder = users_target
    output = tmp_path / "out"
    argv = ["audit", "mia", "--data", pool_csv, "--label-col", "digit", "--model", folder / "model.skops", "--members", folder / "members.txt"]
    code, _, stderr = run_cli([*argv, "--references", "4", "--output", output, "--no-history", "--workers", "1"])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    conventions = {item["name"]: item for item in data["conventions"]}
    assert conventions["target membership"]["decided"] == "explicit" and conventions["target output kind"]["value"] == "probabilities"
    # every non-member of the user's target is evaluated, the population samples among them
    assert data["num_members"] == rows.size and data["num_records"] == 300 and data["num_population"] == 120
    # the LOSS attack is the model's own log-probability of the label: recomputed here with scikit-learn
    members = np.isin(np.arange(300), rows)
    log_p = np.log(model.predict_proba(x)[np.arange(300), y])
    loss = next(item for item in data["attacks"] if item["attack"] == "loss")
    assert loss["auc"] == pytest.approx(roc_auc_score(members, log_p), abs=1e-9) and loss["num_out"] == 200


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--members", "BAD"], "`--members` must hold row indices of the pool's records, integers in [0, 299]"),
        ([], "`--model` and `--members` go together"),
        (["--members", "members.txt", "--model-output", "softmax"], "`--model-output` must be one of 'auto', 'logits', 'probabilities', 'log-probabilities'"),
    ],
)
def test_users_target_refused_before_any_training(pool_csv, users_target, tmp_path, flags, match):
    *_, folder = users_target
    (tmp_path / "BAD").write_text("0\n1\n300\n", encoding="utf-8")  # a row the pool does not have
    flags = [str(tmp_path / "BAD") if flag == "BAD" else str(folder / flag) if flag == "members.txt" else flag for flag in flags]
    output = tmp_path / "out"
    argv = ["audit", "mia", "--data", pool_csv, "--label-col", "digit", "--model", folder / "model.skops", *flags, "--output", output, "--no-history"]
    assert_refused(argv, output, match)


@pytest.fixture(scope="module")
def users_references(users_target, tmp_path_factory):
    """Four scikit-learn reference models trained on halves of the pool (each row IN two of them), and their membership .npy."""
    skops_io = pytest.importorskip("skops.io")
    from sklearn.neural_network import MLPClassifier

    _, x, y, _, _ = users_target
    rng = np.random.default_rng(1)
    membership = np.argsort(rng.random((300, 4)), axis=1).T < 2
    folder = tmp_path_factory.mktemp("references")
    for index, rows in enumerate(membership):
        skops_io.dump(MLPClassifier(hidden_layer_sizes=(32,), max_iter=100, random_state=index).fit(x[rows], y[rows]), folder / f"ref-{index}.skops")
    np.save(folder / "membership.npy", membership)
    np.save(folder / "wrong.npy", membership[:, :299])
    return folder


def test_users_reference_models_are_read_not_trained(pool_csv, users_target, users_references, tmp_path):
    *_, target_folder = users_target
    output = tmp_path / "out"
    argv = ["audit", "mia", "--data", pool_csv, "--label-col", "digit", "--model", target_folder / "model.skops", "--members", target_folder / "members.txt"]
    argv += ["--reference-models", users_references, "--reference-membership", users_references / "membership.npy"]
    code, _, stderr = run_cli([*argv, "--output", output, "--no-history"])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    assert data["num_trained"] == 0 and data["num_references"] == 4 and data["seeds"] == []
    assert {item["name"] for item in data["conventions"]} >= {"reference membership", "target membership", "target output kind"}
    # wrong shape: refused, naming the option and the shape it must have
    wrong = [*argv[:-1], users_references / "wrong.npy"]
    assert_refused(
        [*wrong, "--output", tmp_path / "bad", "--no-history"], tmp_path / "bad", "`--reference-membership` must have shape (references, records) = (4, 300)"
    )


def test_trusted_skops_types_reach_the_config_from_the_command_line():
    code, out, err = run_cli(["audit", "mia", "--trusted", "numpy.tanh", "--trusted", "scipy.special.expit", "--print-config"])
    assert code == 0, err
    assert json.loads(out)["trusted"] == ["numpy.tanh", "scipy.special.expit"]
