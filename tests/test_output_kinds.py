"""A classifier's output kind (logits, probabilities, log-probabilities) checked on its outputs, and the loss each gives.

ONNX models are built in the test with onnx's helper API: a linear layer,
then nothing, a Softmax or a LogSoftmax. The true cross-entropy is computed
here in float64 from the layer's own weights, independently of privaudit.
"""

from __future__ import annotations

import sys
import textwrap

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from privaudit.models.loading import LoadedModel, load_model  # noqa: E402
from privaudit.models.outputs import machine_epsilon, output_kind, output_tolerance  # noqa: E402

CLASSES = 3


def linear_onnx(path, head, seed=1):
    """An ONNX classifier x (n, 4) -> head(x W + b) (n, 3), with head None, "Softmax" or "LogSoftmax"; returns (W, b) in float64."""
    rng = np.random.default_rng(seed)
    weight, bias = (2.0 * rng.normal(size=(4, CLASSES))).astype(np.float32), rng.normal(size=CLASSES).astype(np.float32)
    nodes = [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["z" if head else "out"])]
    if head:
        nodes.append(helper.make_node(head, ["z"], ["out"], axis=1))
    graph = helper.make_graph(
        nodes,
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, CLASSES])],
        initializer=[numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))
    return weight.astype(np.float64), bias.astype(np.float64)


def identity_onnx(path):
    """An ONNX model that returns its input: outputs of any kind the test chooses."""
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["out"])],
        "identity",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, CLASSES])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [None, CLASSES])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(path))


def data(seed, n=50):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, CLASSES, n)


def true_loss(weight, bias, x, y):
    """-log softmax(x W + b)_y in float64, by the textbook formula (logits here are small)."""
    logits = x.astype(np.float64) @ weight + bias
    return np.log(np.exp(logits).sum(axis=1)) - logits[np.arange(len(y)), y]


def true_logit_confidence(weight, bias, x, y):
    """log(p_y / (1 - p_y)) in float64 from the true probabilities."""
    logits = x.astype(np.float64) @ weight + bias
    p = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    p_y = p[np.arange(len(y)), y]
    return np.log(p_y) - np.log1p(-p_y)


@pytest.mark.parametrize("seed", [0, 5])
@pytest.mark.parametrize("head, kind", [(None, "logits"), ("Softmax", "probabilities"), ("LogSoftmax", "log-probabilities")])
def test_each_onnx_head_is_checked_and_gives_the_true_loss(tmp_path, head, kind, seed):
    weight, bias = linear_onnx(tmp_path / "m.onnx", head, seed=seed)
    x, y = data(seed)
    loaded = load_model(tmp_path / "m.onnx", kind="onnx").decide_output(x)
    assert loaded.output == kind and loaded.output_convention.decided == "checked" and loaded.output_convention.value == kind
    expected = true_loss(weight, bias, x, y)
    np.testing.assert_allclose(loaded.loss(x, y), expected, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(loaded.logit_confidence(x, y), true_logit_confidence(weight, bias, x, y), rtol=0, atol=1e-5)
    as_logits = load_model(tmp_path / "m.onnx", kind="onnx", output="logits")
    assert as_logits.output_convention.decided == "explicit"
    if kind == "probabilities":  # the logits reading takes a softmax of the probabilities: a different, wrong loss
        probabilities = np.exp(x.astype(np.float64) @ weight + bias)
        probabilities /= probabilities.sum(axis=1, keepdims=True)
        softmax_again = np.log(np.exp(probabilities).sum(axis=1)) - probabilities[np.arange(len(y)), y]
        np.testing.assert_allclose(as_logits.loss(x, y), softmax_again, rtol=1e-6, atol=1e-6)
        assert np.abs(as_logits.loss(x, y) - expected).max() > 0.05
    else:  # logits, and log-probabilities read as logits, give the same loss
        np.testing.assert_allclose(as_logits.loss(x, y), expected, rtol=1e-6, atol=1e-6)


def test_ambiguous_outputs_are_refused_and_the_option_settles_them(tmp_path):
    identity_onnx(tmp_path / "id.onnx")
    rows = np.array([[0.2, 0.3, 0.5], [1.5, -2.0, 0.25], [0.6, 0.3, 0.1]], dtype=np.float32)  # rows 1 and 3 are probabilities, row 2 not
    loaded = load_model(tmp_path / "id.onnx", kind="onnx")
    for call in (lambda: loaded.decide_output(rows), lambda: loaded.loss(rows, [0, 1, 2])):
        with pytest.raises(ValueError, match=r"`output`: 2 of 3 rows .* are probabilities .*`--model-output` on the command line"):
            call()
    with pytest.raises(ValueError, match="1 of 2 rows .* are log-probabilities"):
        output_kind(np.log([[0.5, 0.5], [3.0, 1.0]]))
    explicit = load_model(tmp_path / "id.onnx", kind="onnx", output="logits")
    z = rows.astype(np.float64)
    np.testing.assert_allclose(explicit.loss(rows, [0, 1, 2]), np.log(np.exp(z).sum(axis=1)) - z[[0, 1, 2], [0, 1, 2]], rtol=1e-12)
    with pytest.raises(ValueError, match=r"not probabilities .* in 1 of 3 rows; give `output` 'logits'"):
        load_model(tmp_path / "id.onnx", kind="onnx", output="probabilities").loss(rows, [0, 1, 2])
    with pytest.raises(ValueError, match="classes >= 2"):
        output_kind(np.ones((4, 1)))
    with pytest.raises(ValueError, match="must be finite"):
        output_kind(np.array([[np.nan, 0.0]]))


def test_tiny_probabilities_keep_finite_stable_losses(tmp_path):
    identity_onnx(tmp_path / "id.onnx")
    rows = np.array([[1.0, 0.0, 0.0], [1e-30, 1.0 - 1e-7, 1e-7]], dtype=np.float32)  # underflowed and nearly certain rows
    loaded = load_model(tmp_path / "id.onnx", kind="onnx").decide_output(rows)
    assert loaded.output == "probabilities"
    loss = loaded.loss(rows, [0, 0])
    p = rows.astype(np.float64)
    np.testing.assert_allclose(loss, -np.log(p[:, 0] / p.sum(axis=1)), rtol=1e-12, atol=1e-300)
    # log(p/(1-p)) with 1 - p taken as the other classes' sum: finite and exact where 1 - p_y rounds to 0 in float32
    confidence = loaded.logit_confidence(rows, [1, 1])
    np.testing.assert_allclose(confidence[1], np.log(p[1, 1]) - np.log(p[1, 0] + p[1, 2]), rtol=1e-12)


FACTORY = """
import torch

def softmax_net():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.Softmax(dim=1))
"""


def test_a_torch_module_ending_in_softmax_is_read_as_probabilities(tmp_path, monkeypatch):
    torch = pytest.importorskip("torch")
    (tmp_path / "softmax_models_mod.py").write_text(textwrap.dedent(FACTORY))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("softmax_models_mod", None)
    import softmax_models_mod

    module = softmax_models_mod.softmax_net()
    torch.save(module.state_dict(), tmp_path / "w.pt")
    x, y = data(2)
    loaded = load_model(tmp_path / "w.pt", kind="torch", factory="softmax_models_mod:softmax_net", device="cpu").decide_output(x)
    assert loaded.output_convention.value == "probabilities"
    weight, bias = module[0].weight.detach().double().numpy().T, module[0].bias.detach().double().numpy()
    np.testing.assert_allclose(loaded.loss(x, y), true_loss(weight, bias, x, y), rtol=1e-6, atol=1e-6)


def test_skops_output_kind_is_checked_against_the_api(tmp_path):
    skops_io = pytest.importorskip("skops.io")
    from sklearn.linear_model import LogisticRegression

    x, y = data(3, n=60)
    model = LogisticRegression().fit(x, y)
    skops_io.dump(model, str(tmp_path / "lr.skops"))
    loaded = load_model(tmp_path / "lr.skops", kind="skops")
    convention = loaded.decide_output(x).output_convention
    assert (convention.value, convention.decided) == ("probabilities", "checked") and "predict_proba" in convention.evidence
    np.testing.assert_allclose(loaded.loss(x, y), -np.log(model.predict_proba(x)[np.arange(60), y]), rtol=1e-6)
    with pytest.raises(ValueError, match="`output` must be 'auto' or 'probabilities' for kind 'skops'"):
        load_model(tmp_path / "lr.skops", kind="skops", output="logits")


def test_a_decided_model_keeps_its_kind():
    class Half:
        def predict_proba(self, x):
            return np.full((len(x), 2), 0.5)

    decided = LoadedModel("skops", Half(), output="probabilities")
    assert decided.decide_output(np.zeros((2, 1))) is decided


def test_the_tolerance_follows_the_precision_the_model_computed_in():
    torch = pytest.importorskip("torch")

    class HalfPrecisionSoftmax(torch.nn.Module):  # a softmax rounded to bfloat16: rows sum to 1 only to about 1e-2
        def forward(self, x):
            return torch.softmax(x * 3.0, dim=1).to(torch.bfloat16)

    x = np.random.default_rng(6).normal(size=(200, 5)).astype(np.float32)
    rounded = HalfPrecisionSoftmax()(torch.from_numpy(x)).double().numpy()
    assert np.abs(rounded.sum(axis=1) - 1).max() > output_tolerance(5, machine_epsilon(np.float32))  # too far for a float32 softmax
    loaded = LoadedModel("torch", HalfPrecisionSoftmax()).decide_output(x)
    assert loaded.output == "probabilities" and "tolerance 0.62" in loaded.output_convention.evidence  # 16 x 5 x 2^-7


def test_an_onnx_model_with_two_candidate_outputs_is_refused_until_one_is_named(tmp_path):
    # a classifier that also returns its features: (features, probabilities), both 2-D float; reading the first as scores would be silent and wrong
    graph = helper.make_graph(
        [helper.make_node("Identity", ["x"], ["features"]), helper.make_node("Softmax", ["x"], ["probabilities"], axis=1)],
        "two-heads",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, CLASSES])],
        [
            helper.make_tensor_value_info("features", TensorProto.FLOAT, [None, CLASSES]),
            helper.make_tensor_value_info("probabilities", TensorProto.FLOAT, [None, CLASSES]),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "two.onnx"))
    with pytest.raises(ValueError, match=r"has 2 2-D float outputs \['features', 'probabilities'\].*name it with `output_name`"):
        load_model(tmp_path / "two.onnx", kind="onnx")
    x, y = np.array([[2.0, 0.0, -1.0], [0.5, 0.5, 3.0]], dtype=np.float32), np.array([0, 2])
    loaded = load_model(tmp_path / "two.onnx", kind="onnx", output_name="probabilities").decide_output(x)
    z = x.astype(np.float64)
    np.testing.assert_allclose(loaded.loss(x, y), np.log(np.exp(z).sum(axis=1)) - z[np.arange(2), y], rtol=1e-6)
    assert loaded.output_convention.value == "probabilities"
