"""Guards an audit applies before or while it runs: memory estimates, an exhausted extraction budget, a diverging training."""

from __future__ import annotations

import json

import pytest

from privaudit._core.resources import available_memory, check_memory
from privaudit.audits.registry import get_audit
from privaudit.cli import main


def _cli(argv, capsys):
    with pytest.raises(SystemExit) as code:
        main([str(part) for part in argv])
    captured = capsys.readouterr()
    return code.value.code, captured.out, captured.err


def test_check_memory_compares_with_what_is_available():
    check_memory(available_memory() // 2, "half")
    with pytest.raises(ValueError, match="`x` = 3 needs about"):
        check_memory(available_memory() + 2**30, "`x` = 3")


@pytest.mark.parametrize(
    "name, values, setting",
    [
        ("dpsgd", {"num_slots": 10**9, "canaries_per_step": 10}, "`num_slots`"),
        ("secret-sharer", {"hidden": 10**6}, "`hidden`"),
        ("blackbox", {"num_models_per_side": 10**12}, "`num_models_per_side`"),
        ("fl", {"num_canaries": 10, "num_unobserved": 10, "training": {"hidden": 10**8}}, "`training.hidden`"),
        ("panoramia", {"hidden": 10**9}, "`hidden` = 1000000000"),
        ("panoramia", {"targets": {"wide": {"hidden": 10**6, "depth": 10**3}}}, "`targets.wide.hidden` = 1000000, `targets.wide.depth` = 1000"),
        ("panoramia", {"helper": {"hidden": 10**9}}, "`helper.hidden` = 1000000000"),
    ],
)
def test_sizes_the_machine_cannot_hold_are_refused_before_any_work(name, values, setting, tmp_path, capsys):
    config = tmp_path / "c.json"
    config.write_text(json.dumps(values))
    code, out, err = _cli(["audit", name, "--config", config, "--output", tmp_path / "out", "--no-history"], capsys)
    assert code == 2 and out == "" and setting in err and "GiB" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()
    estimate, what = get_audit(name).memory_estimate(get_audit(name).load_config(config))
    assert estimate > available_memory() and setting in what


def test_the_defaults_fit_on_this_machine():
    for name in ("dpsgd", "secret-sharer", "blackbox", "fl", "panoramia"):
        audit = get_audit(name)
        estimate, _ = audit.memory_estimate(audit.default_config())
        assert 0 < estimate < available_memory()


def _panoramia_on_spec(tmp_path, spec):
    import numpy as np

    (tmp_path / "m.pt").write_bytes(b"never read: the spec is refused first")
    (tmp_path / "m.json").write_text(json.dumps(spec))
    np.savez(tmp_path / "members.npz", x=np.zeros((50, 2)), y=np.zeros(50, dtype=np.int64))
    return ["audit", "panoramia", "--model", tmp_path / "m.pt", "--members", tmp_path / "members.npz", "--output", tmp_path / "out", "--no-history"]


@pytest.mark.parametrize(
    "spec, shown",
    [
        ({"architecture": "mlp", "input_dim": 10**7, "num_classes": 2, "hidden": 10**7}, "`input_dim` = 10000000, `hidden` = 10000000"),
        ({"architecture": "mlp", "input_dim": 2, "num_classes": 2, "hidden": 10**4, "depth": 10**6}, "`input_dim` = 2, `hidden` = 10000, `depth` = 1000000"),
        ({"architecture": "linear", "input_dim": 10**12, "num_classes": 10}, "`input_dim` = 1000000000000"),
    ],
)
def test_a_panoramia_spec_the_machine_cannot_hold_is_refused_before_the_model_is_built(spec, shown, tmp_path, capsys, monkeypatch):
    import privaudit.audits.panoramia.targets as targets

    def must_not_run(*args, **kwargs):
        raise AssertionError("the members or the model were loaded before the sizes were checked")

    monkeypatch.setattr(targets, "load_model", must_not_run)
    monkeypatch.setattr("privaudit.audits.panoramia.own_model.load_model", must_not_run)
    monkeypatch.setattr("privaudit.audits.panoramia.own_model.load_members", must_not_run)
    code, out, err = _cli(_panoramia_on_spec(tmp_path, spec), capsys)
    assert code == 2 and out == "" and len(err.strip().splitlines()) == 1, err
    assert f"the `--spec` model ({shown}) needs about" in err and "GiB" in err
    assert not (tmp_path / "out").exists()


def test_the_spec_estimate_counts_the_weights_of_the_model_it_describes():
    pytest.importorskip("torch")
    from privaudit.audits.panoramia import classifier_parameters, spec_memory_estimate
    from privaudit.models.classifiers import build_classifier, count_parameters

    for architecture, sizes in [("linear", {"input_dim": 30}), ("mlp", {"input_dim": 30, "hidden": 16, "depth": 3}), ("mlp", {"input_dim": 7, "hidden": 5})]:
        model = build_classifier(architecture, num_classes=3, **sizes)
        assert classifier_parameters(architecture, num_classes=3, **sizes) == count_parameters(model)
    cnn = build_classifier("cnn", input_dim=64, num_classes=10, image_shape=(1, 8, 8))
    assert count_parameters(cnn) <= classifier_parameters("cnn", input_dim=64, num_classes=10) < 10 * count_parameters(cnn)
    assert spec_memory_estimate("unused.pt", _write_spec({"architecture": "mlp", "input_dim": 30, "num_classes": 2, "hidden": 16}))[0] < 2**20


def _write_spec(spec):
    import tempfile
    from pathlib import Path

    path = Path(tempfile.mkdtemp()) / "spec.json"
    path.write_text(json.dumps(spec))
    return path


@pytest.mark.parametrize("spec", ['{"architecture": "mlp", "input_dim": "wide", "num_classes": 2}', "[1, 2]", '{"input_dim": true, "num_classes": 2}'])
def test_a_spec_the_estimate_cannot_read_is_left_to_the_model_loader(spec, tmp_path):
    from privaudit.audits.panoramia import spec_memory_estimate

    (tmp_path / "m.json").write_text(spec)
    assert spec_memory_estimate(tmp_path / "m.pt") == (0, "")


def test_an_exhausted_extraction_budget_is_recorded_not_fatal():
    pytest.importorskip("torch")
    from privaudit.audits.secret_sharer.audit import SecretSharerConfig

    config = SecretSharerConfig(
        template="pin {digits:3}",
        schedule=(1, 2),
        num_references=20,
        max_corpus_chars=2000,
        epochs=1,
        hidden=16,
        extract=True,
        max_extraction_queries=5,
        extraction_batch_size=2,
    )
    result = get_audit("secret-sharer").run(config).result
    assert result.extraction["text"] is None and result.extraction["outcome"] == "not extracted within 5 queries"
    assert all(canary["extracted"] is False for canary in result.canaries)


def test_a_diverging_blackbox_training_says_so_and_leaves_no_checkpoints(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("sklearn")
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"learning_rate": 1e300, "num_steps": 2, "num_models_per_side": 5}))
    code, out, err = _cli(["audit", "blackbox", "--config", config, "--output", tmp_path / "out", "--no-history", "--workers", "1"], capsys)
    assert code == 2 and "training diverged" in err and "`learning_rate`" in err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    "name, values, message",
    [
        ("dpsgd", {"noise_multiplier": 1e300}, "`noise_multiplier` must be in [0.0001, 1e+06], got 1e+300"),
        ("dpsgd", {"noise_multiplier": 1e-300}, "`noise_multiplier` must be in [0.0001, 1e+06], got 1e-300"),
        ("blackbox", {"noise_multiplier": 1e-300}, "`noise_multiplier` must be in [0.0001, 1e+06]"),
        ("secret-sharer", {"max_corpus_chars": -5}, "`max_corpus_chars` must be an integer in [1, inf), got -5"),
        ("secret-sharer", {"schedule": [1.5, 2]}, "`schedule"),
    ],
)
def test_settings_that_would_give_a_wrong_number_are_refused(name, values, message, tmp_path, capsys):
    config = tmp_path / "c.json"
    config.write_text(json.dumps(values))
    code, out, err = _cli(["audit", name, "--config", config, "--output", tmp_path / "out", "--no-history"], capsys)
    assert code == 2 and out == "" and message in err and not (tmp_path / "out").exists()


def test_a_non_integer_schedule_is_refused_from_python_too():
    from privaudit.audits.secret_sharer.audit import SecretSharerConfig

    with pytest.raises(ValueError, match="must be integers"):
        SecretSharerConfig(schedule=(1.5, 2))
