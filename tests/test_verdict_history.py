"""The history keys an audit by the audited model's identity, never by its family alone."""

from __future__ import annotations

from privaudit.history import HistoryStore, compare, default_model_id


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


def test_a_changed_file_under_the_same_path_is_another_model(tmp_path):
    path = tmp_path / "model.skops"
    path.write_bytes(b"one")
    before = default_model_id({"audit": "mia", "config": {"model": str(path)}})
    path.write_bytes(b"two")
    assert default_model_id({"audit": "mia", "config": {"model": str(path)}}) != before


def test_a_training_function_is_keyed_with_its_datas_hash(tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("x,y\n1,0\n")
    first = default_model_id({"audit": "blackbox", "config": {"train": "m:train", "data": str(data), "dataset": "breast-cancer"}})
    data.write_text("x,y\n2,1\n")
    second = default_model_id({"audit": "blackbox", "config": {"train": "m:train", "data": str(data), "dataset": "breast-cancer"}})
    assert first != second and first.startswith("train=m:train/data=d.csv@")
