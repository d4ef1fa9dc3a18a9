"""The user's own PyTorch module and dataset file in `audit dpsgd`, and the user's training function in `audit blackbox` (issue 17).

The user's code lives in ``tests/own_models/relu_net.py`` and is named by import
path, as a user would name theirs: ``--model own_models.relu_net:make`` and
``--train own_models.relu_net:train_memoriser``. Each run writes a
schema-valid results.json that ``privaudit report`` renders; each bad input
exits 2 with one ``error:`` line naming the option, and leaves no output folder.
"""

from __future__ import annotations

import json
import pickle
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import assert_refused as refused
from cli_helpers import run_cli as run

from privaudit.schemas import validate_results

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

TESTS = Path(__file__).parent
TINY = {"num_steps": 3, "canaries_per_step": 10, "num_slots": 100}  # 30 observations in, 270 out
MODEL = "own_models.relu_net:make"


@pytest.fixture(autouse=True)
def user_code_importable(monkeypatch):
    monkeypatch.syspath_prepend(str(TESTS))  # as a user's package on the Python path


@pytest.fixture(scope="module", autouse=True)
def one_thread():
    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # tiny models: torch's thread pool costs more than it saves
    yield
    torch.set_num_threads(threads)


def check_written(output, tmp_path, audit):
    data = json.loads((output / "results.json").read_text())
    assert validate_results(data, "results")["audit"] == audit
    report = tmp_path / f"{output.name}.html"
    code, stdout, stderr = run(["report", output, "--output", report])
    assert code == 0, stderr
    assert report.stat().st_size > 0
    return data


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The user's data (4 features, 3 classes, 90 examples) as .npz and as .csv with the label in a middle column, and a tiny config."""
    folder = tmp_path_factory.mktemp("own_dpsgd")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(90, 4))
    y = np.argmax(x[:, :3], axis=1).astype(np.int64)
    np.savez(folder / "data.npz", x=x, y=y)
    np.savetxt(folder / "data.csv", np.column_stack([x[:, :2], y, x[:, 2:]]), delimiter=",", header="a,b,target,c,d", comments="")
    (folder / "tiny.json").write_text(json.dumps(TINY))
    return folder


def dpsgd(files, output, *extra):
    return ["audit", "dpsgd", "--config", files / "tiny.json", "--output", output, "--no-history", *extra]


# -- (a) DP-SGD on the user's ReLU module and data file -------------------------------------
def test_dpsgd_on_the_users_module_and_npz(files, tmp_path):
    from own_models import relu_net

    from privaudit.models.classifiers import build_classifier, count_parameters

    out = tmp_path / "npz"
    code, stdout, stderr = run(dpsgd(files, out, "--model", MODEL, "--data", files / "data.npz"))
    assert code == 0, stderr
    data = check_written(out, tmp_path, "dpsgd")
    assert data["config"]["architecture"] == MODEL and data["config"]["dataset"] == str(files / "data.npz")
    model = data["model"]
    own = sum(p.numel() for p in relu_net.make().parameters())
    builtin = count_parameters(build_classifier("mlp", input_dim=4, num_classes=3))
    assert model["architecture"] == MODEL and model["num_parameters"] == own == 131 and own != builtin
    assert (model["num_features"], model["num_classes"], model["num_train"] + model["num_test"]) == (4, 3, 90)
    assert (data["num_in"], data["num_out"]) == (30, 270)
    assert data["claimed_step_epsilon"] == pytest.approx(1.27, abs=0.01)
    bound = data["step_bounds"]["gdp_clopper_pearson"]
    assert bound["kind"] == "lower bound" and 0.0 <= bound["epsilon"] < 5.0 and bound["num_in"] == 30
    assert 0.0 <= data["test_accuracy"] <= 1.0


def test_dpsgd_on_a_csv_with_a_label_column_and_weights(files, tmp_path):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    from own_models import relu_net

    from privaudit._core.labelled import read_labelled
    from privaudit.data.tabular import load_dataset_file

    # the CSV (label in its third column) reads as the same dataset as the .npz
    read = read_labelled(files / "data.csv", "--data", label_col="target")
    x_csv, y_csv = read.x, read.y
    arrays = np.load(files / "data.npz")
    np.testing.assert_array_equal(x_csv, arrays["x"])
    np.testing.assert_array_equal(y_csv, arrays["y"])
    # weights that make the module answer class 2 whatever the input, through 3 noisy steps: test accuracy is the share of class 2
    state = {name: torch.zeros_like(value) for name, value in relu_net.make().state_dict().items()}
    state["fc2.bias"] = torch.tensor([0.0, 0.0, 1e6])
    safetensors_torch.save_file(state, str(tmp_path / "w.safetensors"))
    out = tmp_path / "csv"
    argv = dpsgd(files, out, "--model", MODEL, "--weights", tmp_path / "w.safetensors", "--data", files / "data.csv", "--label-col", "target")
    code, stdout, stderr = run(argv)
    assert code == 0, stderr
    data = check_written(out, tmp_path, "dpsgd")
    assert data["config"]["weights"] == str(tmp_path / "w.safetensors") and data["config"]["label_col"] == "target"
    assert data["model"]["num_parameters"] == 131 and data["model"]["num_features"] == 4
    split = load_dataset_file(files / "data.csv", label_col="target", seed=0)
    assert data["test_accuracy"] == pytest.approx(float(np.mean(split.y_test == 2)))
    assert data["num_in"] == 30 and data["step_bounds"]["gdp_clopper_pearson"]["epsilon"] >= 0.0


# -- (b) the black-box audit with the user's training function ---------------------------
def test_blackbox_with_the_users_training_function(tmp_path):
    (tmp_path / "b.json").write_text(json.dumps({"num_models_per_side": 5}))
    out = tmp_path / "bb"
    train = "own_models.relu_net:train_memoriser"
    code, stdout, stderr = run(["audit", "blackbox", "--config", tmp_path / "b.json", "--train", train, "--workers", 1, "--output", out, "--no-history"])
    assert code == 0, stderr
    data = check_written(out, tmp_path, "blackbox")
    assert data["config"]["train"] == train and (data["num_in"], data["num_out"]) == (5, 5)
    # the memoriser returns the canary's (flipped) label with probability 1 when it trained on it, and 0 otherwise
    assert data["mean_in_score"] == 0.0 and data["mean_out_score"] == pytest.approx(np.log(np.finfo(np.float64).tiny))
    runs = [json.loads(path.read_text()) for path in sorted((out / "runs").glob("run-*.json"))]
    assert len(runs) == 10


def test_blackbox_scores_a_returned_torch_module_by_its_logits():
    from own_models import relu_net

    from privaudit.audits.blackbox.audit import _canary, _data, run_configs, train_one
    from privaudit.audits.blackbox.config import BlackBoxConfig

    config = run_configs(BlackBoxConfig(num_models_per_side=5, train="own_models.relu_net:train_torch"))[0]
    result = train_one(config)
    data = _data("breast-cancer", 0)
    canary_x, canary_y = _canary(data, "mislabeled")
    x = np.concatenate([data.x_train, canary_x[None]]).astype(np.float32)
    y = np.concatenate([data.y_train, [canary_y]]).astype(np.int64)
    model = relu_net.train_torch(x, y, seed=result["seed"])
    with torch.no_grad():
        expected = torch.log_softmax(model(torch.from_numpy(canary_x)[None]).double(), 1)[0, canary_y]
    assert result["with_canary"] and result["score"] == pytest.approx(float(expected), abs=1e-9)
    bad = dict(config, train="own_models.relu_net:train_returns_number")
    with pytest.raises(ValueError, match="must be a torch.nn.Module, an object with predict_proba or a predict_proba function, got float"):
        train_one(bad)


@pytest.mark.parametrize(
    ("train", "match"),
    [
        ("no_such_module_xyz:fit", "`--train` 'no_such_module_xyz:fit': cannot import"),
        ("own_models.relu_net:NOT_CALLABLE", "`--train` 'own_models.relu_net:NOT_CALLABLE' is not callable"),
        ("own_models.relu_net:nothing_here", "has no attribute 'nothing_here'"),
        ("own_models.relu_net", "`--train` must be 'package.module:callable'"),
        ("own_models.relu_net:train_no_seed", "must accept (x_train, y_train, *, seed)"),
    ],
)
def test_blackbox_refuses_a_bad_training_function_before_training(tmp_path, train, match):
    (tmp_path / "b.json").write_text(json.dumps({"num_models_per_side": 5}))
    out = tmp_path / "bb"
    refused(["audit", "blackbox", "--config", tmp_path / "b.json", "--train", train, "--output", out, "--no-history"], out, match)


# -- (c) bad input to `audit dpsgd --model/--weights/--data` -----------------------------
def _write(folder: Path, name: str, text: str) -> Path:
    (folder / name).write_text(text)
    return folder / name


def _npz(folder: Path, name: str, **arrays) -> Path:
    np.savez(folder / name, **arrays)
    return folder / name


def _weights(folder: Path, factory: str) -> Path:
    from own_models import relu_net

    torch.save(getattr(relu_net, factory)().state_dict(), folder / f"{factory}.pt")
    return folder / f"{factory}.pt"


def _pickle(folder: Path) -> Path:
    (folder / "model.pkl").write_bytes(pickle.dumps({"fc1.weight": [1.0]}, protocol=4))
    return folder / "model.pkl"


NPZ = "<npz>"  # replaced by the fixture's good .npz
BAD_DPSGD = [
    # the module
    ("not-importable", lambda f: ["--model", "no_such_module_xyz:make", "--data", NPZ], "`--model` 'no_such_module_xyz:make': cannot import"),
    ("not-callable", lambda f: ["--model", "own_models.relu_net:NOT_CALLABLE", "--data", NPZ], "is not callable"),
    ("no-attribute", lambda f: ["--model", "own_models.relu_net:nothing_here", "--data", NPZ], "has no attribute 'nothing_here'"),
    ("no-colon", lambda f: ["--model", "own_models.relu_net", "--data", NPZ], "`--model` must be 'package.module:callable'"),
    ("not-a-module", lambda f: ["--model", "own_models.relu_net:not_a_module", "--data", NPZ], "must return a torch.nn.Module, got list"),
    ("regressor", lambda f: ["--model", "own_models.relu_net:regressor", "--data", NPZ], "must return class logits of shape (n, classes)"),
    ("batchnorm", lambda f: ["--model", "own_models.relu_net:with_batchnorm", "--data", NPZ], "cannot compute per-example gradients"),
    # the weights
    ("weights-do-not-fit", lambda f: ["--model", MODEL, "--weights", _weights(f, "wide"), "--data", NPZ], "do not fit the architecture"),
    ("weights-pickle", lambda f: ["--model", MODEL, "--weights", _pickle(f), "--data", NPZ], "is a pickle file"),
    ("weights-missing", lambda f: ["--model", MODEL, "--weights", f / "none.pt", "--data", NPZ], "`--weights` must be an existing weights file"),
    ("weights-not-torch", lambda f: ["--model", MODEL, "--weights", _write(f, "w.pt", "0,1\n"), "--data", NPZ], "is not a torch weights file"),
    ("weights-without-model", lambda f: ["--weights", _weights(f, "make"), "--data", NPZ], "`--weights` needs `--model"),
    # the data
    ("data-too-wide", lambda f: ["--model", MODEL, "--data", _npz(f, "wide.npz", x=np.zeros((8, 5)), y=np.arange(8) % 3)], "`--data` does not fit the module"),
    ("data-1d", lambda f: ["--model", MODEL, "--data", _npz(f, "flat.npz", x=np.zeros(8), y=np.zeros(8))], "must hold features x of shape (n, d)"),
    ("data-y-rows", lambda f: ["--model", MODEL, "--data", _npz(f, "short.npz", x=np.zeros((8, 4)), y=np.zeros(7))], "must hold features x of shape (n, d)"),
    ("data-npz-nan", lambda f: ["--model", MODEL, "--data", _npz(f, "nan.npz", x=np.full((8, 4), np.nan), y=np.zeros(8))], "only finite numbers"),
    ("data-npz-no-y", lambda f: ["--model", MODEL, "--data", _npz(f, "noy.npz", x=np.zeros((8, 4)))], "`--data` must be an .npz with arrays 'x', 'y'"),
    (
        "data-csv-nan",
        lambda f: ["--model", MODEL, "--data", _write(f, "nan.csv", "1,2,3,4,0\n1,nan,3,4,1\n")],
        "`--data` column 2 of 5 has a missing value ('nan') on line 2",
    ),
    (
        "data-csv-text",
        lambda f: ["--model", MODEL, "--data", _write(f, "text.csv", "a,b,c,d,y\n1,2,x,4,0\n1,2,3,4,1\n"), "--label-col", "y"],
        "column 'c' (column 3 of 5) holds text ('x' on line 2",
    ),
    (
        "data-csv-empty-cell",
        lambda f: ["--model", MODEL, "--data", _write(f, "gap.csv", "1,2,3,4,0\n1,,3,4,1\n")],
        "column 2 of 5 has a missing value ('') on line 2",
    ),
    ("data-csv-ragged", lambda f: ["--model", MODEL, "--data", _write(f, "ragged.csv", "1,2,3,4,0\n1,2,3,1\n")], "line 2 has 4 cells, expected 5"),
    (
        "data-fractional-labels",
        lambda f: ["--model", MODEL, "--data", _write(f, "frac.csv", "a,b,c,d,y\n1,2,3,4,0.5\n1,2,3,4,1\n"), "--label-col", "y"],
        "integer class labels",
    ),
    ("data-negative-labels", lambda f: ["--model", MODEL, "--data", _npz(f, "neg.npz", x=np.zeros((8, 4)), y=-np.ones(8))], "integer class labels"),
    ("data-few-rows", lambda f: ["--model", MODEL, "--data", _write(f, "few.csv", ".1,.2,.3,.4,0\n.1,.2,.3,.4,1\n")], "at least 4 examples"),
    ("data-suffix", lambda f: ["--model", MODEL, "--data", _write(f, "data.txt", "1,2\n")], "`--data` must be a .npz, .csv or .parquet file"),
    ("data-missing", lambda f: ["--model", MODEL, "--data", f / "missing.csv"], "`--data`: cannot read"),
    # the label column
    (
        "label-col-missing",
        lambda f: ["--model", MODEL, "--data", _write(f, "h.csv", "a,b,c,d,y\n1,2,3,4,0\n"), "--label-col", "label"],
        "has no column 'label'",
    ),
    ("label-col-no-header", lambda f: ["--model", MODEL, "--data", _write(f, "nh.csv", "1,2,3,4,0\n"), "--label-col", "y"], "needs a header row"),
    ("label-col-npz", lambda f: ["--model", MODEL, "--data", NPZ, "--label-col", "y"], "`--label-col` needs `--data` with a .csv"),
]


@pytest.mark.parametrize(("build", "match"), [case[1:] for case in BAD_DPSGD], ids=[case[0] for case in BAD_DPSGD])
def test_dpsgd_bad_input_exits_2_with_one_line_and_nothing_written(files, tmp_path, build, match):
    out = tmp_path / "out"
    extra = [files / "data.npz" if arg == NPZ else arg for arg in build(tmp_path)]
    refused(dpsgd(files, out, *extra), out, match)


def test_dpsgd_parquet_without_pyarrow_names_what_to_install(files, tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # as on a machine without the parquet extra
    out = tmp_path / "out"
    (tmp_path / "d.parquet").write_bytes(b"PAR1")
    refused(dpsgd(files, out, "--model", MODEL, "--data", tmp_path / "d.parquet"), out, "privaudit[parquet]")


def test_parquet_reads_like_csv(files, tmp_path):
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from privaudit._core.labelled import read_labelled

    frame = pandas.read_csv(files / "data.csv")
    frame.to_parquet(tmp_path / "d.parquet")
    parquet, csv = (read_labelled(path, "--data", label_col="target") for path in (tmp_path / "d.parquet", files / "data.csv"))
    np.testing.assert_array_equal(parquet.x, csv.x)
    np.testing.assert_array_equal(parquet.y, csv.y)
