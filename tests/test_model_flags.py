"""skops messages that name options the user can pass, and the CLI's --trusted and --model-output reaching the loader.

The PANORAMIA game itself is replaced by a stub that stops the command once
the target is loaded and scored: these tests are about the loading, which
comes first, not the audit (tests/test_own_model_cli.py runs that in full).
"""

from __future__ import annotations

import operator
import pickle

import numpy as np
import pytest
from cli_helpers import assert_refused

from privaudit.models.loading import load_model

skops_io = pytest.importorskip("skops.io")
onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from test_output_kinds import identity_onnx  # noqa: E402


def members_csv(path, x, y):
    np.savetxt(path, np.column_stack([x, y]), delimiter=",", header=",".join(f"f{i}" for i in range(x.shape[1])) + ",label", comments="")


@pytest.fixture()
def risky_pipeline(tmp_path):
    """A scikit-learn pipeline with a callable skops does not trust (operator.attrgetter), saved with skops, and its members."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer

    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 3)).round(3)
    y = (x[:, 0] > 0).astype(np.int64)
    pipeline = make_pipeline(FunctionTransformer(operator.attrgetter("real")), LogisticRegression()).fit(x, y)
    skops_io.dump(pipeline, str(tmp_path / "risky.skops"))
    members_csv(tmp_path / "members.csv", x, y)
    return pipeline, x, y


@pytest.fixture()
def audit_stub(monkeypatch):
    """Stop `audit panoramia` where the game would start, with the loss function it was given."""
    seen = {}

    def stop(loss, x, y, **_):
        seen["loss"] = loss(x, y)
        raise ValueError("stub: the target loaded and scored")

    monkeypatch.setattr("privaudit.audits.panoramia.own_model.run_panoramia", stop)
    return seen


def test_a_pickle_named_skops_gets_scikit_learn_advice(tmp_path):
    (tmp_path / "model.skops").write_bytes(pickle.dumps({"coef": [1.0]}, protocol=4))
    with pytest.raises(ValueError, match="is a pickle file") as error:
        load_model(tmp_path / "model.skops", kind="skops")
    assert "skops.io.dump" in str(error.value) and "safetensors" not in str(error.value)
    (tmp_path / "plain.skops").write_bytes(b"not a zip archive")
    with pytest.raises(ValueError, match=r"not a skops file .*save the scikit-learn model with skops.io.dump"):
        load_model(tmp_path / "plain.skops", kind="skops")
    (tmp_path / "w.pt").write_bytes(pickle.dumps({"w": 1}, protocol=4))  # torch weights keep their own advice
    with pytest.raises(ValueError, match="safetensors"):
        load_model(tmp_path / "w.pt", kind="torch", factory="privaudit.models.classifiers:build_classifier")


def test_untrusted_skops_types_name_the_option_that_trusts_them(tmp_path, risky_pipeline, audit_stub):
    pipeline, x, y = risky_pipeline
    with pytest.raises(ValueError, match=r"operator.attrgetter; if you trust the file, allow them with --trusted operator.attrgetter on the command line"):
        load_model(tmp_path / "risky.skops", kind="skops")
    loaded = load_model(tmp_path / "risky.skops", kind="skops", trusted="operator.attrgetter")
    np.testing.assert_allclose(loaded.loss(x, y), -np.log(pipeline.predict_proba(x)[np.arange(len(y)), y]), rtol=1e-12)
    output = tmp_path / "out"
    base = ["audit", "panoramia", "--model", tmp_path / "risky.skops", "--model-kind", "skops", "--members", tmp_path / "members.csv", "--no-history"]
    assert_refused(base + ["--output", output], output, "--trusted operator.attrgetter on the command line")
    assert_refused(base + ["--trusted", "operator.attrgetter", "--output", output], output, "stub: the target loaded and scored")
    np.testing.assert_allclose(audit_stub["loss"], -np.log(pipeline.predict_proba(x)[np.arange(len(y)), y]), rtol=1e-12)


def test_model_output_settles_an_ambiguous_onnx_model_on_the_command_line(tmp_path, audit_stub):
    identity_onnx(tmp_path / "id.onnx")
    rng = np.random.default_rng(9)
    x = rng.dirichlet(np.ones(3), size=30)
    x[10:] = rng.normal(size=(20, 3))  # 10 rows are probabilities, 20 are not: no kind fits them all
    y = rng.integers(0, 3, 30)
    members_csv(tmp_path / "members.csv", x, y)
    output = tmp_path / "out"
    base = ["audit", "panoramia", "--model", tmp_path / "id.onnx", "--model-kind", "onnx", "--members", tmp_path / "members.csv", "--no-history"]
    assert_refused(base + ["--output", output], output, "`--model-output` on the command line")
    assert_refused(base + ["--model-output", "logits", "--output", output], output, "stub: the target loaded and scored")
    z = x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(audit_stub["loss"], np.log(np.exp(z).sum(axis=1)) - z[np.arange(30), y], rtol=1e-12)
    assert_refused(base + ["--model-output", "softmax", "--output", output], output, "`--model-output` must be one of 'auto', 'logits'")
    own = ["audit", "panoramia", "--model", tmp_path / "own.pt", "--members", tmp_path / "members.csv", "--model-output", "logits", "--output", output]
    assert_refused(own, output, "a privaudit classifier returns logits")  # --model-kind privaudit: the kind is known


def test_the_output_kind_is_recorded_for_the_target(tmp_path, monkeypatch):
    from privaudit.audits.panoramia import PanoramiaSettings, run_panoramia_on_model

    monkeypatch.setattr("privaudit.audits.panoramia.own_model.run_panoramia", lambda loss, x, y, **_: (loss(x, y), None))
    identity_onnx(tmp_path / "id.onnx")
    rng = np.random.default_rng(2)
    x, y = rng.dirichlet(np.ones(3), size=20), rng.integers(0, 3, 20)
    members_csv(tmp_path / "members.csv", x, y)
    results, _, conventions = run_panoramia_on_model(tmp_path / "id.onnx", tmp_path / "members.csv", model_kind="onnx", settings=PanoramiaSettings())
    (convention,) = [item for item in conventions if item.name == "output kind"]
    assert (convention.name, convention.value, convention.decided) == ("output kind", "probabilities", "checked")
    p = x.astype(np.float32).astype(np.float64)
    np.testing.assert_allclose(results["id"]["audit"], -np.log(p[np.arange(20), y] / p.sum(axis=1)), rtol=1e-12)
