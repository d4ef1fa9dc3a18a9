"""The versioned results schema: real results.json files of each audit validate, broken ones do not; no pickle anywhere; secure canaries."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pytest

from privaudit.schemas import SCHEMA_VERSION, check_results, load_schema, stamp_results

jsonschema = pytest.importorskip("jsonschema")
ROOT = Path(__file__).resolve().parents[1]


def validator():
    schema = load_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_dpsgd_results_validate_and_a_broken_copy_does_not(cli, tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"num_steps": 3, "canaries_per_step": 20, "num_slots": 100}))
    code, _, err = cli(["audit", "dpsgd", "--config", config, "--output", tmp_path / "run", "--no-history"])
    assert code == 0, err
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    assert data["schema_version"] == SCHEMA_VERSION and data["audit"] == "dpsgd"
    assert data["machine"]["cpu_count"] >= 1
    validator().validate(data)
    broken = {key: value for key, value in data.items() if key != "step_bounds"}
    assert not validator().is_valid(broken)
    wrong_kind = json.loads(json.dumps(data))
    wrong_kind["step_bounds"]["gdp_clopper_pearson"]["confidence"] = 1.5
    assert not validator().is_valid(wrong_kind)


def test_secret_sharer_results_validate_and_record_secure_canaries(tmp_path):
    from privaudit.audits.secret_sharer.audit import AUDIT, SecretSharerConfig
    from privaudit.report.runs import write_run

    def run_secret_sharer(config, directory):
        return write_run(directory, AUDIT.run(config))

    config = SecretSharerConfig(
        template="pin {digits:2}", schedule=(1, 2), num_references=20, max_corpus_chars=2000, epochs=1, hidden=16, extract=False, secure_canaries=True
    )
    run_secret_sharer(config, tmp_path / "run")
    data = json.loads((tmp_path / "run" / "results.json").read_text())
    validator().validate(data)
    assert data["audit"] == "secret-sharer" and data["reproducible"] is False and data["config"]["secure_canaries"] is True
    seeded = dataclasses.replace(config, secure_canaries=False)
    run_secret_sharer(seeded, tmp_path / "seeded")
    assert json.loads((tmp_path / "seeded" / "results.json").read_text())["reproducible"] is True


def test_blackbox_results_validate(tmp_path):
    from privaudit.audits.blackbox.audit import run_blackbox_audit
    from privaudit.audits.blackbox.config import BlackBoxConfig

    result = run_blackbox_audit(BlackBoxConfig(num_steps=2, num_models_per_side=5), tmp_path, max_workers=1)
    data = json.loads(json.dumps(stamp_results(result.to_dict(), audit="blackbox")))
    validator().validate(data)
    assert data["epsilon_lower_bound"] == result.epsilon_lower_bound


def test_the_envelope_check_agrees_with_the_schema():
    good = stamp_results({"result_type": "R", "versions": {"privaudit": "0.1.0"}}, audit="x")
    assert check_results(good) is good and validator().is_valid(good)
    for missing in ("schema_version", "audit", "result_type", "versions"):
        partial = {key: value for key, value in good.items() if key != missing}
        assert not validator().is_valid(partial)
        with pytest.raises(ValueError, match=missing):
            check_results(partial)


def test_the_documentation_describes_every_field_of_the_schema():
    document = (ROOT / "docs" / "results-schema.md").read_text(encoding="utf-8")
    assert f"schema_version` is {SCHEMA_VERSION}" in document
    for field in load_schema()["properties"]:
        assert f"`{field}`" in document, field


def test_model_files_load_weights_only_and_nothing_unpickles():
    sources = {path: path.read_text(encoding="utf-8") for path in (ROOT / "src" / "privaudit").rglob("*.py")}
    loads = [(path, call) for path, text in sources.items() for call in re.findall(r"torch\.load\([^)]*\)", text)]
    assert loads, "expected at least one torch.load in the package"
    for path, call in loads:
        assert "weights_only=True" in call, f"{path}: {call}"
    for path, text in sources.items():
        assert not re.search(r"^\s*(import pickle|from pickle|import dill|import cloudpickle)", text, re.MULTILINE), path
        assert "allow_pickle=True" not in text, path
