"""One loading convention for the user's model: every kind loads, and every wrong file is a ValueError."""

from __future__ import annotations

import pickle
import sys
import textwrap

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from privaudit.models.loading import LoadedModel, load_model

FACTORY_SOURCE = """
import torch

def build():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3))

def wide():
    return torch.nn.Sequential(torch.nn.Linear(4, 9), torch.nn.Tanh(), torch.nn.Linear(9, 3))

def not_a_module():
    return 3
"""


@pytest.fixture
def factory(tmp_path, monkeypatch):
    (tmp_path / "user_models_mod.py").write_text(textwrap.dedent(FACTORY_SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("user_models_mod", None)
    import user_models_mod

    return user_models_mod


def data(n=12, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 4)).astype(np.float32), rng.integers(0, 3, n)


def reference_loss(module, x, y):
    """Cross-entropy by torch's own function, per example."""
    with torch.no_grad():
        return torch.nn.functional.cross_entropy(module(torch.from_numpy(x)), torch.from_numpy(y), reduction="none").double().numpy()


def test_torch_state_dict_and_safetensors_load_strictly(tmp_path, factory):
    safetensors_torch = pytest.importorskip("safetensors.torch")
    module = factory.build()
    with torch.no_grad():
        module[0].weight.mul_(3.0)  # weights that differ from the factory's own initialisation
    torch.save(module.state_dict(), tmp_path / "w.pt")
    safetensors_torch.save_file(module.state_dict(), str(tmp_path / "w.safetensors"))
    x, y = data()
    for name in ("w.pt", "w.safetensors"):
        loaded = load_model(tmp_path / name, kind="torch", factory="user_models_mod:build", device="cpu")
        assert loaded.kind == "torch" and name in loaded.source
        np.testing.assert_allclose(loaded.loss(x, y), reference_loss(module, x, y), rtol=1e-6, atol=1e-7)


def test_weights_that_do_not_fit_are_refused_naming_file_and_keys(tmp_path, factory):
    torch.save(factory.build().state_dict(), tmp_path / "w.pt")
    with pytest.raises(ValueError, match=r"w\.pt.*do not fit.*0\.weight \(8, 4\) vs \(9, 4\)"):
        load_model(tmp_path / "w.pt", kind="torch", factory="user_models_mod:wide", device="cpu")
    state = factory.build().state_dict()
    state["extra.bias"] = torch.zeros(2)
    del state["2.bias"]
    torch.save(state, tmp_path / "x.pt")
    with pytest.raises(ValueError, match=r"missing: 2\.bias; unexpected: extra\.bias"):
        load_model(tmp_path / "x.pt", kind="torch", factory="user_models_mod:build", device="cpu")


def test_pickles_whole_modules_and_bad_factories_are_refused(tmp_path, factory):
    (tmp_path / "p.pkl").write_bytes(pickle.dumps(factory.build().state_dict(), protocol=4))
    with pytest.raises(ValueError, match="is a pickle file"):
        load_model(tmp_path / "p.pkl", kind="torch", factory="user_models_mod:build")
    torch.save(factory.build(), tmp_path / "whole.pt")  # the module itself: needs unpickling classes
    with pytest.raises(ValueError, match="holds more than tensors"):
        load_model(tmp_path / "whole.pt", kind="torch", factory="user_models_mod:build")
    torch.save(factory.build().state_dict(), tmp_path / "w.pt")
    for spec, message in [
        ("user_models_mod", "must be 'package.module:callable'"),
        ("user_models_mod:nope", "has no attribute"),
        ("user_models_mod:not_a_module", "must return a torch.nn.Module"),
    ]:
        with pytest.raises(ValueError, match=message):
            load_model(tmp_path / "w.pt", kind="torch", factory=spec)


def test_files_not_of_the_declared_kind_are_refused(tmp_path, factory):
    torch.save(factory.build().state_dict(), tmp_path / "w.pt")
    (tmp_path / "plain.txt").write_text("not a model")
    with pytest.raises(ValueError, match="is not a torch weights file"):
        load_model(tmp_path / "plain.txt", kind="torch", factory="user_models_mod:build")
    with pytest.raises(ValueError, match="is not a torch-export file"):
        load_model(tmp_path / "w.pt", kind="torch-export")
    with pytest.raises(ValueError, match="is not a skops file"):
        pytest.importorskip("skops")
        load_model(tmp_path / "w.pt", kind="skops")
    with pytest.raises(ValueError, match="is not a onnx file"):
        pytest.importorskip("onnxruntime")
        load_model(tmp_path / "w.pt", kind="onnx")
    with pytest.raises(ValueError, match="is not a huggingface directory"):
        load_model(tmp_path, kind="huggingface")


def test_torch_export_programs_load(tmp_path, factory):
    module = factory.build().eval()
    x, y = data()
    program = torch.export.export(module, (torch.from_numpy(x),))
    torch.export.save(program, str(tmp_path / "m.pt2"))
    loaded = load_model(tmp_path / "m.pt2", kind="torch-export", device="cpu")
    np.testing.assert_allclose(loaded.loss(x, y), reference_loss(module, x, y), rtol=1e-6, atol=1e-7)


def test_skops_loads_trusted_types_only(tmp_path):
    skops_io = pytest.importorskip("skops.io")
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    x, y = data(40)
    model = LogisticRegression().fit(x, y)
    skops_io.dump(model, str(tmp_path / "lr.skops"))
    loaded = load_model(tmp_path / "lr.skops", kind="skops")
    np.testing.assert_allclose(loaded.loss(x, y), -np.log(model.predict_proba(x)[np.arange(40), y].astype(np.float64)), rtol=1e-6)
    skops_io.dump(RandomForestClassifier(n_estimators=2, random_state=0).fit(x, y), str(tmp_path / "rf.skops"))
    assert load_model(tmp_path / "rf.skops", kind="skops").loss(x, y).shape == (40,)  # sklearn's Tree type is allowed
    risky = make_pipeline(FunctionTransformer(np.exp), LogisticRegression()).fit(np.abs(x), y)
    import operator

    risky.steps[0][1].func = operator.attrgetter("T")  # a callable skops does not trust
    skops_io.dump(risky, str(tmp_path / "risky.skops"))
    with pytest.raises(ValueError, match="holds types outside the trusted list: .*operator"):
        load_model(tmp_path / "risky.skops", kind="skops")


def test_onnx_loads_through_onnxruntime(tmp_path):
    onnx = pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(1)
    weight, bias = rng.normal(size=(4, 3)).astype(np.float32), rng.normal(size=3).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["xw"]), helper.make_node("Add", ["xw", "b"], ["logits"])],
        "linear",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, 3])],
        initializer=[numpy_helper.from_array(weight, "w"), numpy_helper.from_array(bias, "b")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, str(tmp_path / "m.onnx"))
    x, y = data()
    logits = x.astype(np.float64) @ weight + bias
    expected = np.log(np.exp(logits).sum(axis=1)) - logits[np.arange(len(y)), y]
    np.testing.assert_allclose(load_model(tmp_path / "m.onnx", kind="onnx").loss(x, y), expected, rtol=1e-5)
    with pytest.raises(ValueError, match="not probabilities"):
        load_model(tmp_path / "m.onnx", kind="onnx", output="probabilities").loss(x, y)


def test_huggingface_directories_load_offline_and_tokenizers_must_fit(tmp_path):
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {symbol: index for index, symbol in enumerate(["[UNK]"] + list("abcdefgh "))}
    backend = tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]"))
    backend.pre_tokenizer = tokenizers.pre_tokenizers.Split("", behavior="isolated")
    tokenizer = transformers.PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]")
    torch.manual_seed(0)
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=len(vocab), n_positions=16, n_embd=16, n_layer=1, n_head=2)).eval()
    model.save_pretrained(tmp_path / "good")
    tokenizer.save_pretrained(tmp_path / "good")
    loaded = load_model(tmp_path / "good", kind="huggingface", device="cpu")
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        torch.testing.assert_close(loaded.model(input_ids=ids).logits, model(input_ids=ids).logits, rtol=0, atol=0)
    assert loaded.tokenizer("abc")["input_ids"] == [1, 2, 3]
    small = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=5, n_positions=16, n_embd=16, n_layer=1, n_head=2))
    small.save_pretrained(tmp_path / "bad")
    tokenizer.save_pretrained(tmp_path / "bad")
    with pytest.raises(ValueError, match="does not match the model: 10 tokens"):
        load_model(tmp_path / "bad", kind="huggingface", device="cpu")
    (tmp_path / "good" / "pytorch_model.bin").write_bytes(pickle.dumps({"a": 1}, protocol=2))
    with pytest.raises(ValueError, match="is a pickle file"):
        load_model(tmp_path / "good", kind="huggingface")
    with pytest.raises(ValueError, match="`loss` scores classifiers"):
        loaded.loss(np.zeros((1, 4)), [0])


def test_loss_validates_labels():
    class Uniform:
        def predict_proba(self, x):
            return np.full((len(x), 3), 1 / 3)

    loaded = LoadedModel("skops", Uniform(), output="probabilities")
    with pytest.raises(ValueError, match=r"`y` must hold integer labels in \[0, 2\]"):
        loaded.loss(np.zeros((2, 1)), [0, 3])
    with pytest.raises(ValueError, match="one label per example"):
        loaded.loss(np.zeros((2, 1)), [0])


def test_huggingface_weights_missing_from_the_checkpoint_are_refused_not_filled_at_random(tmp_path):
    transformers = pytest.importorskip("transformers")
    safetensors_torch = pytest.importorskip("safetensors.torch")
    tokenizers = pytest.importorskip("tokenizers")
    vocab = {symbol: index for index, symbol in enumerate(["[UNK]"] + list("abc"))}
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=tokenizers.Tokenizer(tokenizers.models.WordLevel(vocab, unk_token="[UNK]")), unk_token="[UNK]"
    )
    model = transformers.GPT2LMHeadModel(transformers.GPT2Config(vocab_size=len(vocab), n_positions=8, n_embd=8, n_layer=1, n_head=2))
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    (weights,) = tmp_path.glob("*.safetensors")
    state = safetensors_torch.load_file(str(weights))
    del state["transformer.h.0.mlp.c_fc.weight"]  # a checkpoint cut short: transformers would initialise it at random and only log
    safetensors_torch.save_file(state, str(weights), metadata={"format": "pt"})
    with pytest.raises(ValueError, match=r"do not fit the causal-lm architecture .*missing: transformer\.h\.0\.mlp\.c_fc\.weight"):
        load_model(tmp_path, kind="huggingface", device="cpu")
