"""A release manager's story through the command line (issue 44, items 20-22).

Three audits, in canary mode so each headline is an ε lower bound: release
v1 of a scikit-learn model on one table (a strongly regularised logistic
regression, which cannot fit a mislabeled canary), release v2 of the same
lineage on the same table (a random forest, which fits them), then another
model on another dataset. No ``--model-id`` is given: the lineage is the
default, derived from the table's schema and label column.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import run_cli
from test_records_applied import NOT_IN_MODE, WITHOUT_A_MODEL_FILE, WITHOUT_AUGMENTATIONS

from privaudit.history import HistoryStore

pytest.importorskip("sklearn")

#: the canary mode's settings of each audit: 4 references (the least), seed 0
FLAGS = ["--mode", "canary", "--references", "4", "--workers", "1", "--seed", "0"]


def _table(path, x, y, label):
    header = [f"x{i}" for i in range(x.shape[1])] + [label]
    rows = [",".join(header)] + [",".join(f"{v:g}" for v in [*row, target]) for row, target in zip(x, y, strict=True)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    from sklearn.datasets import load_breast_cancer, load_digits

    folder = tmp_path_factory.mktemp("releases")
    cancer = load_breast_cancer()
    table = _table(folder / "patients.csv", cancer.data, cancer.target, "diagnosis")
    digits = load_digits()
    other = _table(folder / "digits.csv", digits.data[:400], digits.target[:400], "digit")
    history = folder / "h.sqlite"
    runs = {}
    for release, train, data, label, canaries in (
        ("v1", "own_models.releases:release_private", table, "diagnosis", "100"),
        ("v2", "own_models.forests:train_forest", table, "diagnosis", "100"),
        ("v3", "own_models.releases:release_private", other, "digit", "50"),
    ):
        output = folder / release
        argv = ["audit", "mia", *FLAGS, "--data", data, "--label-col", label, "--train", train, "--canaries", canaries]
        code, _, stderr = run_cli([*argv, "--output", output, "--history", history, "--release", release])
        assert code == 0, stderr
        runs[release] = json.loads((output / "results.json").read_text(encoding="utf-8"))
    return folder, history, runs


def _rows(history, *extra):
    code, out, err = run_cli(["history", "--history", history, "--json", *extra])
    assert code == 0, err
    return {row["release"]: row for row in json.loads(out)["audits"]}


def test_v2_is_flagged_against_v1_with_no_model_id(story):
    _, history, runs = story
    rows = _rows(history)
    v1, v2 = runs["v1"]["bound"]["epsilon"], runs["v2"]["bound"]["epsilon"]
    assert v2 - v1 > 0.1, (v1, v2)  # the forest fits its canaries, the regularised model does not
    # compared on the numbers, though the labels name other attacks and ceilings
    assert rows["v1"]["model_id"] == rows["v2"]["model_id"] and rows["v1"]["value"] == v1 and rows["v2"]["value"] == v2
    assert rows["v2"]["change"] == pytest.approx(v2 - v1, abs=1e-12) and rows["v2"]["regression"] is True
    assert rows["v1"]["identity"] != rows["v2"]["identity"]  # two releases: two content identities, one lineage
    assert "train" not in rows["v1"]["model_id"] and "diagnosis" in rows["v1"]["model_id"]
    code, out, _ = run_cli(["history", "--history", history, "--fail-on-regression"])
    assert code == 1 and "REGRESSION" in out and "1 regression(s) flagged" in out


def test_another_dataset_starts_a_new_lineage(story):
    _, history, runs = story
    rows = _rows(history)
    assert rows["v3"]["model_id"] != rows["v2"]["model_id"] and rows["v3"]["change"] is None and not rows["v3"]["regression"]
    # the same releases filed under one --model-id: v3 is still a new lineage, not a change of v2
    named = story[0] / "named.sqlite"
    store = HistoryStore(named)
    for release in ("v1", "v2", "v3"):
        store.append(runs[release], model_id="fraud-model", release=release)
    rows = _rows(named)
    assert rows["v2"]["regression"] is True and rows["v3"]["change"] is None and rows["v3"]["new_lineage"] is True
    # unless the user says the lineage goes on
    rows = _rows(named, "--across-data")
    assert rows["v3"]["change"] == pytest.approx(runs["v3"]["bound"]["epsilon"] - runs["v2"]["bound"]["epsilon"], abs=1e-12)


def test_records_hold_only_what_applied(story):
    folder, _, runs = story
    for release, data in runs.items():
        config = data["config"]
        # the embedded dataset and the built-in MLP's epochs did not apply to the user's table and training function
        absent = {"dataset", "epochs"} | WITHOUT_A_MODEL_FILE | WITHOUT_AUGMENTATIONS | NOT_IN_MODE["canary"]
        assert not absent & set(config), (release, sorted(absent & set(config)))
        assert config["num_canaries"] == int(data["bound"]["num_canaries"]) and config["delta"] == data["bound"]["delta"]
        records = sorted((folder / release / "runs").glob("run-*.json"))
        assert len(records) == 5  # 4 references and the audited model
        for path in records:
            stored = json.loads(path.read_text(encoding="utf-8"))["config"]
            assert not {"dataset", "epochs", "num_trial_models"} & set(stored), (path.name, stored)
            assert stored["data"] == config["data"] and stored["train"] == config["train"]
    assert np.isfinite([runs[release]["wall_time_s"] for release in runs]).all()
