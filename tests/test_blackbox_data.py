"""`privaudit audit blackbox --train --data`: the user's training function sees the user's pool, read with its label column, and bad data are refused."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
from cli_helpers import assert_refused, run_cli

pytest.importorskip("torch")

NUM_ROWS, NUM_FEATURES = 60, 5
TINY = {"num_models_per_side": 5, "num_steps": 2}


@pytest.fixture()
def user(tmp_path, monkeypatch):
    """A 3-class CSV (label column 'kind' between features, a 0/1 feature that could pass for a label), a config, and a logging memoriser module."""
    rng = np.random.default_rng()
    y = np.arange(NUM_ROWS) % 3
    x = rng.normal(size=(NUM_ROWS, NUM_FEATURES)) * 0.05 + 3.0 * y[:, None]  # tight, well-separated classes
    flag = rng.integers(0, 2, NUM_ROWS)
    header = ["a", "kind", *(f"f{i}" for i in range(1, NUM_FEATURES)), "flag"]
    rows = [",".join(header)] + [
        ",".join([repr(float(r[0])), str(label), *(repr(float(v)) for v in r[1:]), str(f)]) for r, label, f in zip(x, y, flag, strict=True)
    ]
    (tmp_path / "pool.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (tmp_path / "config.json").write_text(json.dumps(TINY), encoding="utf-8")
    logs = tmp_path / "logs"
    logs.mkdir()
    module = f"memoriser_{uuid.uuid4().hex}"
    (tmp_path / f"{module}.py").write_text(
        "import numpy as np\n\n\nclass Memoriser:\n"
        "    def __init__(self, x, y):\n        self.x, self.y = x, y\n\n"
        "    def predict_proba(self, x):\n"
        "        out = np.zeros((len(x), 3))\n"
        "        out[np.arange(len(x)), self.y[((x[:, None, :] - self.x[None]) ** 2).sum(-1).argmin(1)]] = 1.0\n"
        "        return out\n\n\n"
        "def fn(x_train, y_train, *, seed):\n"
        f"    np.savez({str(logs)!r} + f'/{{seed}}.npz', x=x_train, y=y_train)\n"
        "    return Memoriser(x_train, y_train)\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    features = np.column_stack([x, flag]).astype(np.float32)  # the feature columns in file order: a, f1.., flag
    return tmp_path, module, features, y


def test_training_function_trains_on_the_users_data_and_the_canary_is_scored_as_brute_force_says(user):
    folder, module, features, labels = user
    argv = ["audit", "blackbox", "--config", folder / "config.json", "--data", folder / "pool.csv", "--label-col", "kind", "--train", f"{module}:fn"]
    code, _, stderr = run_cli([*argv, "--output", folder / "out", "--no-history", "--workers", "1"])
    assert code == 0, stderr
    data = json.loads((folder / "out" / "results.json").read_text(encoding="utf-8"))
    assert data["config"]["data"] == str(folder / "pool.csv") and data["conventions"][0]["decided"] == "explicit"
    assert data["conventions"][0]["value"] == "'kind' (column 2 of 7)"
    # every training set the function saw is rows of the user's file with their labels, plus one mislabelled row in the canary runs
    known = {row.tobytes(): label for row, label in zip(features, labels, strict=True)}
    runs = [np.load(path) for path in sorted((folder / "logs").glob("*.npz"))]
    assert len(runs) == 2 * TINY["num_models_per_side"]
    sizes = sorted({len(run["y"]) for run in runs})
    assert len(sizes) == 2 and sizes[1] == sizes[0] + 1 and sizes[0] < NUM_ROWS
    scores = {"in": [], "out": []}
    for run in runs:
        x, y = run["x"], run["y"]
        wrong = [i for i, row in enumerate(x) if known[row.tobytes()] != y[i]]  # KeyError: a row not in the user's file
        canary_run = len(y) == sizes[1]
        assert len(wrong) == (1 if canary_run else 0)
        if canary_run:
            canary_x, canary_y = x[wrong[0]], y[wrong[0]]
            assert canary_y == (known[canary_x.tobytes()] + 1) % 3
    # brute force: the memoriser returns the canary's label with probability 1 when it trained on it, else its nearest neighbour's label
    for run in runs:
        x, y = run["x"], run["y"]
        nearest = y[((x - canary_x) ** 2).sum(1).argmin()]
        side = "in" if len(y) == sizes[1] else "out"
        scores[side].append(0.0 if nearest == canary_y else np.log(np.finfo(np.float64).tiny))
    assert data["mean_in_score"] == pytest.approx(np.mean(scores["in"])) and data["mean_out_score"] == pytest.approx(np.mean(scores["out"]))


@pytest.mark.parametrize(
    ("flags", "match"),
    [
        (["--data", "pool.csv"], "`--label-col` must name the label column of `--data`"),  # 'kind' and 'flag' could both be it
        (["--data", "pool.csv", "--label-col", "nope"], "`--label-col`: "),
        (["--data", "pool.txt"], "`--data` must be a .npz, .csv or .parquet file"),
        (["--data", "missing.csv"], "`--data`: cannot read"),
        (["--label-col", "kind"], "`--label-col` needs `--data`"),
    ],
)
def test_bad_data_is_refused_before_any_training(user, flags, match):
    folder, module, *_ = user
    flags = [str(folder / flag) if flag.endswith((".csv", ".txt")) else flag for flag in flags]
    output = folder / "out"
    argv = ["audit", "blackbox", "--config", folder / "config.json", "--train", f"{module}:fn", *flags, "--output", output, "--no-history"]
    assert_refused(argv, output, match)
    assert not any((folder / "logs").iterdir())  # the training function never ran
