"""The history store: what goes in comes out, consecutive changes match a brute-force pass, regressions are flagged, audits record themselves."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pytest
from typed_results import blackbox_results

from privaudit.history import HistoryStore, compare, default_model_id, history_path, record_audit


def blackbox(epsilon: float, seed: int = 0) -> dict:
    return blackbox_results(epsilon, seed=seed, claimed=5.0, dataset="breast-cancer", architecture="linear")


def test_round_trip_keeps_the_full_json_and_the_headline(tmp_path):
    store = HistoryStore(tmp_path / "deep" / "h.sqlite")
    data = blackbox(1.25, seed=9)
    store.append(data, model_id="m", release="v1")
    (record,) = store.records()
    assert record.results == json.loads(json.dumps(data))
    assert (record.model_id, record.audit, record.release, record.value, record.kind, record.confidence, record.valid) == (
        "m",
        "blackbox",
        "v1",
        1.25,
        "lower bound",
        0.95,
        True,
    )
    assert record.created_at == data["created_at"]
    # plain JSON text in the file, readable without privaudit (no pickle)
    with sqlite3.connect(tmp_path / "deep" / "h.sqlite") as connection:
        (text,) = connection.execute("SELECT results FROM audits").fetchone()
    assert json.loads(text)["epsilon_lower_bound"] == 1.25


@pytest.mark.parametrize("seed", range(3))
def test_compare_matches_a_brute_force_pass(tmp_path, seed):
    rng = np.random.default_rng(seed)
    store = HistoryStore(tmp_path / "h.sqlite")
    appended = []
    for _ in range(30):
        model = f"model-{rng.integers(3)}"
        epsilon = float(np.round(rng.uniform(0, 3), 3))
        store.append(blackbox(epsilon), model_id=model)
        appended.append((model, epsilon))
    tolerance = 0.25
    changes = compare(store.records(), tolerance=tolerance)
    expected = []
    for model in sorted({m for m, _ in appended}):
        values = [e for m, e in appended if m == model]
        expected += [(model, b - a, b - a > tolerance) for a, b in zip(values, values[1:])]
    got = sorted((c.after.model_id, round(c.change, 9), c.regression) for c in changes)
    assert got == sorted((m, round(d, 9), r) for m, d, r in expected)
    assert len(store.records(model_id="model-0")) == sum(m == "model-0" for m, _ in appended)


def test_history_command_flags_a_regression_and_fails_on_request(cli, tmp_path):
    path = tmp_path / "h.sqlite"
    for epsilon, release in ((1.0, "v1"), (1.05, "v2"), (2.0, "v3")):
        record_audit(blackbox(epsilon), history=path, release=release)
    code, out, err = cli(["history", "--history", path, "--json"])
    assert code == 0, err
    rows = json.loads(out)["audits"]
    assert [r["release"] for r in rows] == ["v1", "v2", "v3"]
    assert [r["change"] for r in rows] == [None, pytest.approx(0.05), pytest.approx(0.95)]
    assert [r["regression"] for r in rows] == [False, False, True]
    code, out, _ = cli(["history", "--history", path])
    assert code == 0 and "REGRESSION" in out and "1 regression(s) flagged" in out
    code, _, _ = cli(["history", "--history", path, "--fail-on-regression"])
    assert code == 1
    code, _, _ = cli(["history", "--history", path, "--fail-on-regression", "--tolerance", "1.0"])
    assert code == 0


def test_where_the_store_lives(tmp_path, monkeypatch):
    monkeypatch.setenv("PRIVAUDIT_HISTORY", str(tmp_path / "env.sqlite"))
    assert history_path() == tmp_path / "env.sqlite"
    assert history_path(tmp_path / "x.sqlite") == tmp_path / "x.sqlite"
    assert history_path(tmp_path / "x.sqlite", enabled=False) is None
    monkeypatch.setenv("PRIVAUDIT_HISTORY", "off")
    assert history_path() is None and record_audit(blackbox(1.0)) is None
    monkeypatch.delenv("PRIVAUDIT_HISTORY")
    assert history_path().name == "history.sqlite" and history_path().parent.name == ".privaudit"


def test_default_model_id():
    assert default_model_id(blackbox(1.0)) == "breast-cancer/linear"
    assert default_model_id({"audit": "secret-sharer", "config": {}}) == "secret-sharer"


def test_an_audit_command_appends_to_the_store(cli, tmp_path):
    config = tmp_path / "dpsgd.json"
    config.write_text(json.dumps({"num_steps": 5, "canaries_per_step": 20, "num_slots": 100, "noise_multiplier": 2.0}))
    path = tmp_path / "h.sqlite"
    code, out, err = cli(
        ["audit", "dpsgd", "--config", config, "--output", tmp_path / "run", "--history", path, "--model-id", "digits-mlp", "--release", "r1", "--json"]
    )
    assert code == 0, err
    (record,) = HistoryStore(path).records()
    written = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record.results == written and (record.model_id, record.release, record.audit) == ("digits-mlp", "r1", "dpsgd")
    assert record.value == written["step_bounds"]["gdp_clopper_pearson"]["epsilon"]
    code, _, err = cli(["audit", "dpsgd", "--config", config, "--output", tmp_path / "run2", "--history", path, "--no-history"])
    assert code == 0, err
    assert len(HistoryStore(path).records()) == 1


def test_the_fl_command_appends_its_estimate(cli, tmp_path):
    pytest.importorskip("privaudit.audits.fl")
    config = tmp_path / "fl.json"
    config.write_text(
        json.dumps({"participations": [1], "num_canaries": 20, "num_unobserved": 20, "training": {"num_rounds": 3, "sampling": "fixed", "hidden": 16}})
    )
    path = tmp_path / "h.sqlite"
    code, _, err = cli(["audit", "fl", "--config", config, "--output", tmp_path / "run", "--history", path])
    assert code == 0, err
    (record,) = HistoryStore(path).records()
    written = json.loads((tmp_path / "run" / "results.json").read_text())
    assert record.audit == "fl" and record.kind == "estimate"
    assert record.value == written["runs"][0]["final"]["estimate"]["epsilon"]
