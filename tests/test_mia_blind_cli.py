"""`audit mia --model … --members-col` on scikit-learn's breast-cancer table: the blind baseline beside the attacks, through the CLI.

A members column drawn with a shift in one column is flagged, the warning names
that column on the console, in results.json and in the report; a random split is
flagged only where its test's p-value is at most 1%. Neither changes an attack's number (LOSS as scikit-learn computes it).
"""

from __future__ import annotations

import json
import uuid

import numpy as np
import pytest
from cli_helpers import run_cli

pytest.importorskip("sklearn")
skops_io = pytest.importorskip("skops.io")

SHIFTED = "symmetry error"


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """The table as a user holds it (ids, named columns, text labels) with two members columns, and a training function for the references."""
    from privaudit.data.tabular import mixed_table

    frame = mixed_table("breast-cancer")
    rng = np.random.default_rng()
    values = frame[SHIFTED].to_numpy()
    frame["shifted"] = (rng.random(len(frame)) < np.where(values > np.median(values), 0.8, 0.2)).astype(int)
    frame["random"] = (rng.random(len(frame)) < 0.5).astype(int)
    folder = tmp_path_factory.mktemp("breast")
    module = f"blind_training_{uuid.uuid4().hex}"
    (folder / f"{module}.py").write_text(
        "from sklearn.naive_bayes import GaussianNB\n\n\ndef fn(x_train, y_train, *, seed):\n    return GaussianNB().fit(x_train, y_train)\n", encoding="utf-8"
    )
    return folder, frame, module


def _user_model(frame, members, path):
    """The user's regularised logistic regression, trained on its members only."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x = frame.drop(columns=["record", "target", "shifted", "random"]).to_numpy(dtype=float)
    model = make_pipeline(StandardScaler(), LogisticRegression(C=0.1, max_iter=1000)).fit(x[members], frame["target"].to_numpy()[members])
    skops_io.dump(model, path)
    return model, x


def _audit(table, tmp_path, monkeypatch, column):
    folder, frame, module = table
    monkeypatch.syspath_prepend(str(folder))
    members = frame[column].to_numpy() == 1
    pool = tmp_path / "pool.csv"
    frame.drop(columns=["shifted" if column == "random" else "random"]).to_csv(pool, index=False)
    model, x = _user_model(frame, members, tmp_path / "model.skops")
    output = tmp_path / "out"
    argv = ["audit", "mia", "--data", pool, "--label-col", "target", "--id-col", "record", "--members-col", column, "--model", tmp_path / "model.skops"]
    code, stdout, stderr = run_cli([*argv, "--train", f"{module}:fn", "--references", "4", "--output", output, "--no-history", "--workers", "1"])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    # the attacks' numbers are the model's: LOSS is the user's model's log-probability of each label, as scikit-learn computes it
    from sklearn.metrics import roc_auc_score

    labels = np.searchsorted(model.classes_, frame["target"].to_numpy())
    log_p = np.log(np.maximum(model.predict_proba(x)[np.arange(len(frame)), labels], 1e-300))
    loss = next(item for item in data["attacks"] if item["attack"] == "loss")
    assert loss["auc"] == pytest.approx(roc_auc_score(members, log_p), abs=1e-9)
    return data, stdout, (output / "report.html").read_text(encoding="utf-8")


def test_a_members_column_shifted_in_one_column_is_flagged_and_the_column_named(table, tmp_path, monkeypatch):
    data, stdout, report = _audit(table, tmp_path, monkeypatch, "shifted")
    blind = data["blind_baseline"]
    assert blind["flagged"] and blind["p_value"] <= 0.01 and blind["separating"][0][0] == SHIFTED
    assert {"record", "shifted", "random"}.isdisjoint(blind["columns"]) and "target" in blind["columns"]  # no id, no membership: the label is record content
    warnings = [text for text in data["sanity_warnings"] if "blind classifier" in text]
    assert len(warnings) == 1 and repr(SHIFTED) in warnings[0]
    assert f"warning: {warnings[0]}" in stdout and "rmia-online: advantage over the blind baseline" in stdout
    auc = next(item for item in data["attacks"] if item["attack"] == "rmia-online")["auc"]
    assert f"AUC {auc - blind['auc']:+.4f}" in stdout
    assert "blind baseline (no model" in report and SHIFTED in report


def test_a_random_members_column_is_not_flagged(table, tmp_path, monkeypatch):
    data, stdout, _ = _audit(table, tmp_path, monkeypatch, "random")
    blind = data["blind_baseline"]
    # a random split is flagged with chance <= 1% (the rate: tests/test_blind_baseline.py), so this run checks that the flag is the test's
    assert blind["flagged"] == (blind["p_value"] <= 0.01) and (blind["separating"] == []) == (not blind["flagged"])
    assert any("blind classifier" in text for text in data["sanity_warnings"]) == blind["flagged"] and "blind baseline (no model" in stdout
    assert f"p = {blind['p_value']:.2g}" in stdout
