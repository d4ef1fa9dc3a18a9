"""PANORAMIA on your model with your --non-members: the blind baseline of the two files, and a warning that names a shift before RM;RN is read."""

from __future__ import annotations

import json

import numpy as np
import pytest
from cli_helpers import assert_refused
from cli_helpers import run_cli as run

torch = pytest.importorskip("torch")
pytest.importorskip("sklearn")

from privaudit.audits.blind import blind_baseline  # noqa: E402
from privaudit.models.classifiers import build_classifier  # noqa: E402


def _files(folder, shift: float):
    """A model and 500 members (.npz); 200 non-members (.csv with a header), their column 'b' moved by ``shift``."""
    rng = np.random.default_rng(7)
    x = rng.integers(0, 4, size=(700, 3)).astype(np.float32)
    y = (x[:, 0] + rng.integers(0, 2, 700) > 2).astype(np.int64)
    x[500:, 1] += shift
    model = build_classifier("mlp", input_dim=3, num_classes=2, hidden=8)
    torch.save(model.state_dict(), folder / "model.pt")
    (folder / "model.json").write_text(json.dumps({"architecture": "mlp", "input_dim": 3, "num_classes": 2, "hidden": 8, "activation": "tanh"}))
    np.savez(folder / "members.npz", x=x[:500], y=y[:500])
    np.savetxt(folder / "non_members.csv", np.column_stack([x[500:], y[500:]]), delimiter=",", header="a,b,c,label", comments="")
    return x, y


def _audit(folder, out):
    argv = ["audit", "panoramia", "--model", folder / "model.pt", "--members", folder / "members.npz", "--non-members", folder / "non_members.csv"]
    return run([*argv, "--label-col", "label", "--inclusion-randomised", "--audit-size", 150, "--helper-epochs", 1, "--output", out, "--no-history"])


@pytest.mark.parametrize("shift", [0.0, 1.5])
def test_the_blind_baseline_reads_both_files_and_a_shift_is_named_with_what_it_means_here(tmp_path, shift):
    x, y = _files(tmp_path, shift)
    code, stdout, stderr = _audit(tmp_path, tmp_path / "out")
    assert code == 0, stderr
    data = json.loads((tmp_path / "out" / "results.json").read_text(encoding="utf-8"))
    blind = data["blind_baseline"]
    # the baseline computed here on the same records: the .npz has no header, so its names are x[i]; the label is a category
    table = {f"x[{i}]": x[:, i] for i in range(3)} | {"label": y.astype(str)}
    direct = blind_baseline(table, np.arange(700) < 500, seed=0)
    assert (blind["num_in"], blind["num_out"]) == (500, 200) and blind["auc"] == pytest.approx(direct.auc, abs=1e-12)
    assert blind["flagged"] == direct.flagged and "blind baseline" in stdout
    if shift:
        assert blind["flagged"] and blind["separating"][0][0] == "x[1]"
        (warning,) = data["sanity_warnings"]
        assert "RM;RN's bound reads them as one random split" in warning and "--inclusion-randomised" in warning
    assert bool(data.get("sanity_warnings")) == blind["flagged"]  # the warning comes with the flag, and only with it


def test_the_non_members_labels_are_read_in_the_members_codes_and_their_columns_checked():
    from privaudit._core.conventions import default
    from privaudit._core.labelled import LabelledData
    from privaudit.audits.panoramia.own_model import labels_as_members

    label = default("label column", "label", "test")
    members = LabelledData(np.zeros((3, 2)), np.array([0, 1, 2]), label, feature_names=("a", "b"), classes=("cat", "dog", "eel"))
    dogs = LabelledData(np.zeros((2, 2)), np.array([0, 0]), label, feature_names=("a", "b"), classes=("dog",))  # its own code 0 is "dog"
    assert labels_as_members(members, dogs).tolist() == [1, 1]
    swapped = LabelledData(np.zeros((2, 2)), np.array([0, 0]), label, feature_names=("b", "a"), classes=("dog",))
    with pytest.raises(ValueError, match="`--non-members` must have the columns of `--members` in the same order, got \\['b', 'a'\\]"):
        labels_as_members(members, swapped)
    fox = LabelledData(np.zeros((1, 2)), np.array([0]), label, feature_names=("a", "b"), classes=("fox",))
    with pytest.raises(ValueError, match="`--non-members` has label\\(s\\) \\['fox'\\] that `--members` never uses"):
        labels_as_members(members, fox)
    numbers = LabelledData(np.zeros((1, 2)), np.array([1]), label, feature_names=("a", "b"))
    with pytest.raises(ValueError, match="one file's labels are text and the other's numbers"):
        labels_as_members(members, numbers)


def test_non_members_with_their_columns_in_another_order_are_refused_before_the_audit(tmp_path):
    x, y = _files(tmp_path, 0.0)
    np.savetxt(tmp_path / "members.csv", np.column_stack([x[:500], y[:500]]), delimiter=",", header="a,b,c,label", comments="")
    np.savetxt(tmp_path / "non_members.csv", np.column_stack([x[500:, [1, 0, 2]], y[500:]]), delimiter=",", header="b,a,c,label", comments="")
    output = tmp_path / "out"
    argv = ["audit", "panoramia", "--model", tmp_path / "model.pt", "--members", tmp_path / "members.csv", "--non-members", tmp_path / "non_members.csv"]
    assert_refused(
        [*argv, "--label-col", "label", "--output", output, "--no-history"], output, "`--non-members` must have the columns of `--members` in the same order"
    )
