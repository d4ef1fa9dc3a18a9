"""The audit interface, checked for every family of the registry: tiny run, write_run, schema, round trip, report, history."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import warnings

import pytest
from test_records_applied import NOT_APPLIED
from verdict_helpers import assert_like_for_like

from privaudit.audits.base import Audit
from privaudit.audits.config import config_from_dict, config_text, config_to_dict, with_overrides
from privaudit.audits.registry import get_audit, names
from privaudit.cli import main
from privaudit.history import HistoryStore
from privaudit.report.runs import write_run
from privaudit.schemas import load_schema

jsonschema = pytest.importorskip("jsonschema")


def _needs(audit) -> None:
    missing = [package for package in (*audit.requires, "matplotlib") if importlib.util.find_spec(package) is None]
    if missing:
        pytest.skip(f"needs {', '.join(missing)}")


@pytest.mark.parametrize("name", names())
def test_default_config_round_trips(name):
    audit = get_audit(name)
    config = audit.default_config()
    assert config_from_dict(type(config), json.loads(json.dumps(config_to_dict(config)))) == config
    assert audit.with_seed(config, 7).seed == 7


@pytest.mark.parametrize("name", names())
def test_family_runs_writes_validates_round_trips_renders_and_records(name, tmp_path, capsys):
    audit = get_audit(name)
    _needs(audit)
    run = audit.run(audit.tiny_config())
    assert run.audit == name and isinstance(run.result, audit.result_type)
    data = write_run(tmp_path / "run", run)
    on_disk = json.loads((tmp_path / "run" / "results.json").read_text())
    assert on_disk == data and on_disk["audit"] == name and on_disk["schema_version"] == 1
    # results.json records the config that ran: its own fields only, none that did not apply (issue 44, item 22)
    recorded = set(on_disk.get("config") or {})
    assert recorded <= {field.name for field in dataclasses.fields(audit.tiny_config())}, sorted(recorded)
    assert not recorded & (NOT_APPLIED.get(name, set()) | run.result.inert_config_fields()), sorted(recorded & NOT_APPLIED.get(name, set()))
    jsonschema.Draft202012Validator(load_schema()).validate(on_disk)
    assert audit.result_from_dict(on_disk) == run.result  # from_dict gives back an equal result
    assert_like_for_like(run.result)
    headline = run.result.headline()
    assert headline.kind in ("lower bound", "estimate", "statistic", "approximate lower bound", "credible bound") and isinstance(headline.valid, bool)
    assert isinstance(getattr(run.result, "threat_model", None) or getattr(run.result, "threat_models", None), (str, dict))
    with pytest.raises(SystemExit) as code:
        main(["report", str(tmp_path / "run"), "--output", str(tmp_path / "report.html")])
    assert code.value.code == 0, capsys.readouterr().err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert headline.label.split(" ")[0] in page
    store = HistoryStore(tmp_path / "history.sqlite")
    store.append(on_disk, model_id="tiny")
    (record,) = store.records()
    assert record.audit == name and record.value == pytest.approx(headline.value) and record.kind == headline.kind


@pytest.mark.parametrize("name", names())
def test_cli_prints_the_embedded_default_config(name, capsys):
    with pytest.raises(SystemExit) as code:
        main(["audit", name, "--print-config"])
    assert code.value.code == 0
    printed = json.loads(capsys.readouterr().out)
    audit = get_audit(name)
    assert config_from_dict(audit.config_type, printed) == audit.default_config()


@pytest.mark.parametrize("name", names())
def test_bad_config_key_names_its_path(name, tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("no_such_key: 3\n")
    with pytest.raises(SystemExit) as code:
        main(["audit", name, "--config", str(config), "--output", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code.value.code == 2 and "unknown keys no_such_key" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "out").exists()


# settings whose value a tiny run must take from the embedded default, not from the config class (a tiny run only shrinks sizes)
_INHERITED = ("seed", "confidence", "delta", "target_delta")


@pytest.mark.parametrize("name", names())
def test_tiny_config_is_the_embedded_default_with_smaller_sizes(name, monkeypatch):
    audit = get_audit(name)
    default = audit.default_config()
    fields = config_to_dict(default)
    # a default that differs from the class's in the inherited settings: the tiny config must follow it
    changed = {"seed": fields["seed"] + 4321}
    changed.update({key: fields[key] * 0.5 for key in _INHERITED[1:] if isinstance(fields.get(key), float)})
    other = with_overrides(default, changed)
    monkeypatch.setattr(audit, "default_config", lambda: other)
    tiny = config_to_dict(audit.tiny_config())
    problems = {key: (tiny[key], value) for key, value in changed.items() if tiny[key] != value}
    assert not problems, f"tiny config of {name} ignores its default config: {problems}"
    if type(audit).tiny_config is Audit.tiny_config:  # the same config as the default, but for the overridden sizes
        expected = with_overrides(other, audit.tiny_overrides)
        assert audit.tiny_config() == expected and expected != other


# families that take minutes at their embedded default run from a small config derived from the printed default
_SLOW_AT_DEFAULT = {"secret-sharer", "blackbox", "fl", "panoramia", "one-run", "mia", "synthetic-text"}
# families that test a claim, which is the user's flag
_CLAIM_REQUIRED = {"mechanism": ["--epsilon", "1"]}


@pytest.mark.parametrize("name", names())
def test_audit_command_runs_without_config_and_report_reads_its_output(name, tmp_path, capsys):
    audit = get_audit(name)
    _needs(audit)
    with pytest.raises(SystemExit) as code:
        main(["audit", name, "--print-config"])
    assert code.value.code == 0
    printed = tmp_path / "default.json"
    printed.write_text(capsys.readouterr().out, encoding="utf-8")
    default = audit.load_config(printed)  # what --print-config prints is a config file
    assert default == audit.default_config()
    output = tmp_path / "out"
    argv = ["audit", name, "--output", str(output), "--no-history"]
    if name in _CLAIM_REQUIRED:  # the claim under test is the user's: the example mechanism's own `claim` is never taken
        argv += _CLAIM_REQUIRED[name]
    if name in _SLOW_AT_DEFAULT:
        overrides = audit.tiny_overrides or {k: v for k, v in config_to_dict(audit.tiny_config()).items() if config_to_dict(default)[k] != v}
        small = tmp_path / "small.json"
        small.write_text(config_text(with_overrides(default, overrides)), encoding="utf-8")
        argv += ["--config", str(small)]
    with warnings.catch_warnings(record=True) as escaped, pytest.raises(SystemExit) as code:
        warnings.simplefilter("always")
        main(argv)
    err = capsys.readouterr().err
    assert code.value.code == 0, err
    # a quiet console: libraries' warnings are recorded, never printed between the bars; only privaudit's own notes reach stderr
    assert not escaped, [f"{item.category.__name__}: {item.message}" for item in escaped]
    assert all(line.startswith("note: ") for line in err.splitlines() if line.strip()), err
    data = json.loads((output / "results.json").read_text(encoding="utf-8"))
    assert isinstance(data["captured_warnings"], list)
    ran = default if name not in _CLAIM_REQUIRED else dataclasses.replace(default, epsilon=1.0)
    assert data["audit"] == name and (name in _SLOW_AT_DEFAULT or config_from_dict(audit.config_type, data["config"]) == ran)
    with pytest.raises(SystemExit) as code:
        main(["report", str(output), "--output", str(tmp_path / "report.html")])
    assert code.value.code == 0, capsys.readouterr().err
    headline = audit.result_from_dict(data).headline()
    assert headline.label.split(" ")[0] in (tmp_path / "report.html").read_text(encoding="utf-8")
