"""The label column on the command line (`audit panoramia`, `audit dpsgd --model --data`) and a config's values against the flags.

The reported failures: PANORAMIA took the last CSV column as the label, so
members with the label first and a 0/1 feature last ran on the wrong labels;
and a config's ``label_col`` with ``--data`` on the command line failed with
"needs --data". The labels each run used are compared with an independent
read of the file (numpy's ``loadtxt``), and with the last column, which the
old rule would have taken.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_refused as refused
from cli_helpers import run_cli as run

from privaudit.schemas import validate_results

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

TESTS = Path(__file__).parent
TINY_DPSGD = {"num_steps": 3, "canaries_per_step": 10, "num_slots": 100}
MODEL = "own_models.relu_net:make"  # 4 features, 3 classes


@pytest.fixture(autouse=True)
def user_code_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Label first (3 classes), three real features, a 0/1 feature last that is never equal to the label; as .csv and .npz."""
    folder = tmp_path_factory.mktemp("label_first")
    rng = np.random.default_rng(7)
    n = 400
    label = rng.integers(0, 3, n)
    flag = 1 - (label % 2)
    features = rng.normal(size=(n, 3))
    np.savetxt(folder / "m.csv", np.column_stack([label, features, flag]), delimiter=",", header="label,a,b,c,flag", comments="", fmt="%.17g")
    np.savez(folder / "m.npz", x=np.column_stack([features, flag]), y=label)
    (folder / "tiny.json").write_text(json.dumps(TINY_DPSGD))
    (folder / "tiny_label.json").write_text(json.dumps({**TINY_DPSGD, "label_col": "label"}))
    return folder


def independent_read(path):
    """(labels, what taking the last column would have read), by numpy alone."""
    table = np.loadtxt(path, delimiter=",", skiprows=1)
    return table[:, 0].astype(np.int64), table[:, -1].astype(np.int64)


def results(output):
    return validate_results(json.loads((output / "results.json").read_text()), "results")


# -- PANORAMIA ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def model(files):
    from privaudit.audits.panoramia import save_classifier
    from privaudit.models.classifiers import build_classifier

    save_classifier(build_classifier("mlp", input_dim=4, num_classes=3, hidden=8), files / "model.pt", architecture="mlp", input_dim=4, num_classes=3, hidden=8)
    return files / "model.pt"


def panoramia(files, model, output, *extra):
    size = ["--audit-size", 150, "--helper-epochs", 1]
    return ["audit", "panoramia", "--model", model, "--members", files / "m.csv", *size, "--output", output, "--no-history", *extra]


def test_panoramia_refuses_label_first_and_a_binary_feature_last_without_label_col(files, model, tmp_path):
    out = tmp_path / "out"
    line = refused(panoramia(files, model, out), out, "`--label-col`")
    assert "'label' (column 1 of 5), 'flag' (column 5 of 5)" in line and "`--members`" in line


class GameReached(Exception):
    """Raised by the spy once the game's inputs are recorded: the game itself (seconds of generator and classifier fits) is not under test."""


def test_panoramia_with_label_col_plays_the_game_on_the_named_column(files, model, tmp_path, monkeypatch):
    from privaudit.audits.panoramia import own_model as panoramia_audit

    seen = {}

    def spy(target_loss, members_x, members_y, **kwargs):  # the arrays the game would be played on
        seen["x"], seen["y"] = np.asarray(members_x), np.asarray(members_y)
        seen["losses"] = target_loss(members_x, members_y)
        raise GameReached

    monkeypatch.setattr(panoramia_audit, "run_panoramia", spy)
    out = tmp_path / "run"
    with pytest.raises(GameReached):
        run(panoramia(files, model, out, "--label-col", "label"))
    labels, last = independent_read(files / "m.csv")
    features = np.loadtxt(files / "m.csv", delimiter=",", skiprows=1)[:, 1:]
    np.testing.assert_array_equal(seen["y"], labels)
    np.testing.assert_array_equal(seen["x"], features)
    assert (seen["y"] != last).all()  # the old rule's labels differ on every row
    # and the model's losses, which PANORAMIA scores, would differ too: cross-entropy at the labels numpy read vs at the last column
    from privaudit.audits.panoramia import load_model

    target, _ = load_model(model)
    np.testing.assert_allclose(seen["losses"], target.loss(features, labels))
    assert not np.allclose(seen["losses"], target.loss(features, last))


def test_panoramia_label_col_needs_a_csv_or_parquet_and_a_model(files, model, tmp_path):
    out = tmp_path / "out"
    npz_only = ["audit", "panoramia", "--model", model, "--members", files / "m.npz", "--label-col", "label", "--output", out, "--no-history"]
    refused(npz_only, out, "`--label-col` names the label column of a .csv or .parquet `--members` or `--non-members`")
    refused(["audit", "panoramia", "--label-col", "label", "--output", out, "--no-history"], out, "`--label-col` needs `--model` and `--members`")


# -- DP-SGD on the user's module and data ----------------------------------------------------
def dpsgd(files, output, *extra, config="tiny.json"):
    return ["audit", "dpsgd", "--config", files / config, "--model", MODEL, "--output", output, "--no-history", *extra]


def test_dpsgd_refuses_label_first_and_a_binary_feature_last_without_label_col(files, tmp_path):
    out = tmp_path / "out"
    line = refused(dpsgd(files, out, "--data", files / "m.csv"), out, "`--label-col` must name the label column of `--data`")
    assert "'label' (column 1 of 5), 'flag' (column 5 of 5)" in line


def test_dpsgd_config_label_col_with_data_on_the_command_line_reads_the_named_column(files, tmp_path):
    from own_models import relu_net

    from privaudit.data.tabular import _stratified_split

    # weights that answer class 2 whatever the input: test accuracy is the share of label 2 among the test rows
    state = {name: torch.zeros_like(value) for name, value in relu_net.make().state_dict().items()}
    state["fc2.bias"] = torch.tensor([0.0, 0.0, 1e6])
    torch.save(state, tmp_path / "w.pt")
    out = tmp_path / "csv"
    code, stdout, stderr = run(dpsgd(files, out, "--data", files / "m.csv", "--weights", tmp_path / "w.pt", config="tiny_label.json"))
    assert code == 0, stderr
    data = results(out)
    assert data["config"]["label_col"] == "label" and data["config"]["dataset"] == str(files / "m.csv")
    assert data["conventions"] == [
        {"name": "label column of --data", "value": "'label' (column 1 of 5)", "decided": "explicit", "evidence": "--label-col (config `label_col`)"}
    ]
    labels, last = independent_read(files / "m.csv")
    _, test = _stratified_split(labels, 0.25, np.random.default_rng(0))  # the split of seed 0, on the labels numpy read
    expected = float(np.mean(labels[test] == 2))
    assert expected > 0 and data["test_accuracy"] == pytest.approx(expected)
    assert data["model"]["num_classes"] == 3 and int(last.max()) + 1 == 2  # the last column would have made 2 classes and accuracy 0


def test_dpsgd_npz_labels_are_its_array_y(files, tmp_path):
    out = tmp_path / "npz"
    code, stdout, stderr = run(dpsgd(files, out, "--data", files / "m.npz"))
    assert code == 0, stderr
    data = results(out)
    assert data["conventions"] == [
        {"name": "label column of --data", "value": "array 'y'", "decided": "explicit", "evidence": "the .npz key 'y' (by name, not position)"}
    ]
    assert data["model"]["num_classes"] == int(np.load(files / "m.npz")["y"].max()) + 1 == 3
    refused(dpsgd(files, tmp_path / "o", "--data", files / "m.npz", "--label-col", "label"), tmp_path / "o", "`--label-col` needs `--data`")


# -- a config's values against the flags: flags override, a config value alone is enough -------
SOURCES = ("none", "config", "flag", "both")


@pytest.mark.parametrize("label_source", SOURCES)
@pytest.mark.parametrize("data_source", SOURCES)
def test_config_and_flags_combine_by_one_precedence_rule(tmp_path, data_source, label_source):
    config, argv = {}, []
    if data_source in ("config", "both"):
        config["dataset"] = "from_config.csv"
    if data_source in ("flag", "both"):
        argv += ["--data", "from_flag.csv"]
    if label_source in ("config", "both"):
        config["label_col"] = "config_label"
    if label_source in ("flag", "both"):
        argv += ["--label-col", "flag_label"]
    (tmp_path / "c.json").write_text(json.dumps(config))
    out = tmp_path / "out"
    command = ["audit", "dpsgd", "--config", tmp_path / "c.json", "--print-config", "--output", out, *argv]
    dataset = {"none": "digits", "config": "from_config.csv"}.get(data_source, "from_flag.csv")
    label = {"none": None, "config": "config_label"}.get(label_source, "flag_label")
    if label is not None and dataset == "digits":  # a label column of the embedded data, from either side: refused
        # the message names each setting as the user wrote it: the config's key beside the flag only when the config holds it
        label_words = "`--label-col` (`label_col`)" if "label_col" in config else "`--label-col`"
        data_words = "`--data` (`dataset`)" if "dataset" in config else "`--data`"
        refused(command, out, f"{label_words} needs {data_words} with a .csv or .parquet file")
        return
    code, stdout, stderr = run(command)
    assert code == 0, stderr
    printed = json.loads(stdout)
    assert (printed["dataset"], printed["label_col"]) == (dataset, label)


def test_a_flag_overriding_the_configs_data_is_checked_against_the_configs_label_col(tmp_path):
    (tmp_path / "c.json").write_text(json.dumps({"dataset": "a.csv", "label_col": "label"}))
    out = tmp_path / "out"
    argv = ["audit", "dpsgd", "--config", tmp_path / "c.json", "--data", "b.npz", "--output", out, "--no-history"]
    refused(argv, out, "`--label-col` (`label_col`) needs `--data` (`dataset`) with a .csv or .parquet file")
