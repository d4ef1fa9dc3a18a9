"""`audit synthetic-data --train --holdout` on scikit-learn's diabetes table (``sex`` as text): the blind baseline of the user's split.

Records of --train and --holdout told apart without the synthetic table: a
holdout drawn with a shift in ``age`` is flagged and the column named; a random
one only where its test's p-value is at most 1%.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import run_cli

pytest.importorskip("sklearn")
pytest.importorskip("pandas")


@pytest.mark.parametrize("shifted", [True, False])
def test_the_users_train_and_holdout_are_told_apart_only_when_shifted(shifted, tmp_path):
    from privaudit.data.tabular import mixed_table

    frame = mixed_table("diabetes")
    rng = np.random.default_rng()
    age = frame["age"].to_numpy()
    member = rng.random(len(frame)) < (np.where(age > np.median(age), 0.8, 0.2) if shifted else 0.5)
    paths = {name: tmp_path / f"{name}.csv" for name in ("train", "holdout", "synthetic")}
    frame[member].to_csv(paths["train"], index=False)
    frame[~member].to_csv(paths["holdout"], index=False)
    frame[member].sample(frac=1.0, random_state=int(rng.integers(1000))).to_csv(paths["synthetic"], index=False)  # a release that copies
    output = tmp_path / "out"
    argv = ["audit", "synthetic-data", "--train", paths["train"], "--holdout", paths["holdout"], "--synthetic", paths["synthetic"], "--id-col", "record"]
    code, stdout, stderr = run_cli([*argv, "--shadows", "0", "--output", output, "--no-history"])
    assert code == 0, stderr
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    blind = data["blind_baseline"]
    assert blind["num_in"] == int(member.sum()) and blind["num_out"] == int((~member).sum()) and "record" not in blind["columns"]
    warnings = [text for text in data["sanity_warnings"] if "blind classifier" in text]
    # a random holdout is flagged with chance <= 1% (the rate: tests/test_blind_baseline.py): there the flag must be the test's
    assert blind["flagged"] == (shifted or blind["p_value"] <= 0.01) and blind["flagged"] == (blind["p_value"] <= 0.01)
    assert len(warnings) == int(blind["flagged"]) and "blind baseline (no model" in stdout
    if shifted:
        assert blind["separating"][0][0] == "age" and "'age'" in warnings[0] and f"warning: {warnings[0]}" in stdout
        assert "robust-dcr: advantage over the blind baseline" in stdout
