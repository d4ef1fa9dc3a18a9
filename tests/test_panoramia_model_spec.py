"""`audit panoramia --model-kind privaudit`: the spec says what the weights' shapes cannot (activation, pooling); pickles are refused as pickles."""

from __future__ import annotations

import json
import pickle

import numpy as np
import pytest

torch = pytest.importorskip("torch")


from cli_helpers import assert_refused  # noqa: E402

from privaudit.audits.panoramia import load_model, save_classifier, train_classifier  # noqa: E402
from privaudit.audits.panoramia.targets import BUILT_WITH, TrainingRecipe  # noqa: E402
from privaudit.models.classifiers import build_classifier  # noqa: E402

SIZES = {"architecture": "mlp", "input_dim": 3, "num_classes": 2, "hidden": 8}


def relu_mlp():
    """A ReLU network whose state dict has exactly the keys and shapes of privaudit's (Tanh) mlp of ``SIZES``."""
    nn = torch.nn
    return nn.Sequential(nn.Flatten(), nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 2))


@pytest.fixture
def members(tmp_path):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    np.savez(tmp_path / "members.npz", x=x, y=(x[:, 0] > 0).astype(np.int64))
    return tmp_path / "members.npz"


def refused(tmp_path, members, model, match, *extra):
    """Exit 2, one error line containing ``match``, nothing on stdout and no output directory."""
    out = tmp_path / "out"
    return assert_refused(["audit", "panoramia", "--model", model, "--members", members, *extra, "--output", out, "--no-history"], out, match)


def test_relu_weights_with_a_spec_that_does_not_name_the_activation_are_refused(tmp_path, members):
    torch.save(relu_mlp().state_dict(), tmp_path / "relu.pt")
    build_classifier(**SIZES).load_state_dict(torch.load(tmp_path / "relu.pt", weights_only=True))  # the shapes alone fit: the old silent load
    (tmp_path / "relu.json").write_text(json.dumps(SIZES))
    line = refused(tmp_path, members, tmp_path / "relu.pt", "`--spec` must record `activation`")
    assert "'tanh'" in line


def test_relu_weights_into_a_tanh_spec_are_refused_when_the_state_dict_records_relu(tmp_path, members):
    save_classifier(relu_mlp(), tmp_path / "relu.pt", **SIZES)  # records the modules' own activation: relu
    assert json.loads((tmp_path / "relu.json").read_text())["activation"] == "relu"
    (tmp_path / "tanh.json").write_text(json.dumps({**SIZES, "activation": "tanh"}))
    line = refused(tmp_path, members, tmp_path / "relu.pt", "does not match the architecture recorded in `--model`", "--spec", tmp_path / "tanh.json")
    assert "`activation` is 'tanh' in the spec and 'relu' in the weights" in line
    # the spec that describes them: privaudit builds no ReLU network, and says how to audit one
    refused(tmp_path, members, tmp_path / "relu.pt", "`activation` must be 'tanh'", "--spec", tmp_path / "relu.json")
    (tmp_path / "relu.json").unlink()  # the recorded spec alone: the same refusal
    assert "--model-kind torch" in refused(tmp_path, members, tmp_path / "relu.pt", "`activation` must be 'tanh'")


def test_a_cnn_spec_must_name_its_pooling(tmp_path, members):
    cnn = {"architecture": "cnn", "input_dim": 16, "num_classes": 2, "image_shape": [1, 4, 4], "activation": "tanh"}
    torch.save(build_classifier(**{k: v for k, v in cnn.items() if k != "activation"}).state_dict(), tmp_path / "cnn.pt")
    (tmp_path / "cnn.json").write_text(json.dumps(cnn))
    refused(tmp_path, members, tmp_path / "cnn.pt", "`--spec` must record `pooling`")
    assert BUILT_WITH == {"linear": (), "mlp": ("activation",), "cnn": ("activation", "pooling")}


def test_a_pickle_is_reported_as_a_pickle(tmp_path, members):
    (tmp_path / "model.pkl").write_bytes(pickle.dumps({"weights": [1.0, 2.0]}, protocol=4))
    (tmp_path / "model.json").write_text(json.dumps({**SIZES, "activation": "tanh"}))
    line = refused(tmp_path, members, tmp_path / "model.pkl", "is a pickle file", "--spec", tmp_path / "model.json")
    assert "privaudit never unpickles" in line and line.startswith("error: `--model`")


def test_privaudit_s_own_saved_targets_load_with_their_spec_or_their_record_alone(tmp_path):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    target = train_classifier(x, (x[:, 0] > 0).astype(np.int64), TrainingRecipe(hidden=8, epochs=2), num_classes=2)
    spec = save_classifier(target, tmp_path / "target.pt", **SIZES)
    assert spec == {**SIZES, "depth": 1, "activation": "tanh"}
    expected = target.loss(x, (x[:, 0] > 0).astype(np.int64))

    def loaded_loss(spec_path=None):
        model, loaded_spec = load_model(tmp_path / "target.pt", spec_path)
        assert loaded_spec["activation"] == "tanh"
        return model.loss(x, (x[:, 0] > 0).astype(np.int64))

    np.testing.assert_array_equal(loaded_loss(), expected)  # the spec beside it
    (tmp_path / "old.json").write_text(json.dumps(SIZES))  # a spec without the activation: the matching record supplies it
    np.testing.assert_array_equal(loaded_loss(tmp_path / "old.json"), expected)
    (tmp_path / "target.json").unlink()  # the record alone
    np.testing.assert_array_equal(loaded_loss(), expected)
    (tmp_path / "other.json").write_text(json.dumps({**SIZES, "hidden": 16}))
    with pytest.raises(ValueError, match="`hidden` is 16 in the spec and 8 in the weights"):
        load_model(tmp_path / "target.pt", tmp_path / "other.json")


def test_a_plain_state_dict_with_a_complete_spec_still_loads(tmp_path):
    model = build_classifier(**SIZES, seed=3)
    torch.save(model.state_dict(), tmp_path / "m.pt")
    (tmp_path / "m.json").write_text(json.dumps({**SIZES, "activation": "tanh"}))
    loaded, _ = load_model(tmp_path / "m.pt")
    x = np.random.default_rng(0).normal(size=(5, 3)).astype(np.float32)
    with torch.no_grad():
        np.testing.assert_array_equal(loaded.model(torch.as_tensor(x)).numpy(), model(torch.as_tensor(x)).numpy())
