"""The history files an audit under its lineage (data schema, task, architecture), never its family alone, and keeps each release's content identity."""

from __future__ import annotations

from privaudit.history import HistoryStore, compare, default_model_id
from privaudit.history_ids import model_identity


def _results(model, epsilon):
    return {"audit": "lm-one-run", "epsilon": epsilon, "kind": "lower bound", "confidence": 0.95, "model": str(model), "config": {"delta": 1e-5}}


def test_two_models_audited_by_one_family_are_two_model_ids(tmp_path):
    first, second = tmp_path / "model-a", tmp_path / "model-b"
    for folder, weights in ((first, b"\x00" * 64), (second, b"\x01" * 64)):
        folder.mkdir()
        (folder / "model.safetensors").write_bytes(weights)
        (folder / "config.json").write_text("{}")
    ids = {default_model_id(_results(first, 1.0)), default_model_id(_results(second, 1.0))}
    assert len(ids) == 2 and not ids & {"lm-one-run"}
    store = HistoryStore(tmp_path / "h.sqlite")
    for epsilon in (1.0, 3.0, 5.0):  # alternating models: every second audit leaks more, yet no model regressed
        store.append(_results(first, 1.0), model_id=default_model_id(_results(first, 1.0)))
        store.append(_results(second, epsilon), model_id=default_model_id(_results(second, epsilon)))
    changes = compare(store.records())
    assert {change.before.model_id for change in changes} == ids and all(change.before.model_id == change.after.model_id for change in changes)
    assert sum(change.regression for change in changes) == 2  # model-b's own releases rose twice; model-a never did


def test_a_changed_file_under_the_same_path_is_another_release_of_one_lineage(tmp_path):
    path = tmp_path / "model.skops"
    path.write_bytes(b"one")
    before = {"audit": "mia", "config": {"model": str(path)}}
    first = (default_model_id(before), model_identity(before))
    path.write_bytes(b"two")
    second = (default_model_id(before), model_identity(before))
    assert first[0] == second[0] == "model.skops" and first[1] != second[1]


def test_a_training_function_is_neither_in_the_lineage_nor_its_datas_hash(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x,y\n1,0\n")
    first = {"audit": "blackbox", "config": {"train": "m:train_v1", "data": str(data), "dataset": "breast-cancer", "label_col": "y"}}
    lineage, identity = default_model_id(first), model_identity(first)
    data.write_text("x,y\n2,1\n3,0\n")
    second = {**first, "config": {**first["config"], "train": "m:train_v2"}}
    assert default_model_id(second) == lineage and lineage.startswith("table(2 columns; label y)#") and "train" not in lineage
    assert model_identity(second) != identity and identity.startswith("train=m:train_v1/data=d.csv@")
    data.write_text("x,z,y\n2,1,0\n")  # another schema: another lineage
    assert default_model_id(second) != lineage
