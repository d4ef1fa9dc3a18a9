"""The history store is checked before the work: privaudit's own objects only, never created over the user's file, never where the run writes (issue 44, items 7, 10, 12)."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path

import pytest
from typed_results import blackbox_results

from privaudit.history import HistoryStore

#: a dpsgd audit that finishes in seconds: the refusals below come before it starts
CONFIG = {"num_steps": 2, "canaries_per_step": 5, "num_slots": 20}


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def refused(cli, argv, *needles) -> str:
    code, out, err = cli(argv)
    lines = err.strip().splitlines()
    assert code == 2 and out == "" and len(lines) == 1 and lines[0].startswith("error: "), (code, out, err)
    assert all(needle in lines[0] for needle in needles), lines[0]
    return lines[0]


def audit(tmp_path: Path, history, output: Path | None = None) -> list:
    config = tmp_path / "c.json"
    config.write_text(json.dumps(CONFIG))
    return ["audit", "dpsgd", "--config", config, "--output", output or tmp_path / "run", "--history", history]


def _store_with(path: Path, statement: str) -> str:
    HistoryStore(path).append(blackbox_results(1.0, dataset="digits", architecture="mlp"), model_id="m", release="v1")
    with sqlite3.connect(path) as connection:
        connection.execute(statement)
    connection.close()
    return digest(path)


HOSTILE = {
    "trigger": "CREATE TRIGGER rewrite AFTER INSERT ON audits BEGIN UPDATE audits SET value = 0.0; END",
    "view": "CREATE VIEW latest AS SELECT * FROM audits",
    "index": "CREATE INDEX by_value ON audits (value) WHERE value > 1",
    "table": "CREATE TABLE extra (x)",
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_store_with_an_object_privaudit_did_not_create_is_refused_untouched(cli, tmp_path, kind):
    pytest.importorskip("torch")
    path = tmp_path / "h.sqlite"
    before = _store_with(path, HOSTILE[kind])
    name = {"trigger": "rewrite", "view": "latest", "index": "by_value", "table": "extra"}[kind]
    refused(cli, ["history", "--history", path], "`--history`", name)
    refused(cli, audit(tmp_path, path), "`--history`", name)
    assert digest(path) == before and not (tmp_path / "run").exists()  # refused before the audit; nothing stored, nothing rewritten
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT value FROM audits").fetchall() == [(1.0,)]
    connection.close()


def test_a_trigger_never_rewrites_what_the_history_shows(tmp_path):
    path = tmp_path / "h.sqlite"
    _store_with(path, HOSTILE["trigger"])
    with pytest.raises(ValueError, match="holds a trigger 'rewrite' that privaudit does not create"):
        HistoryStore(path).append(blackbox_results(9.0, dataset="digits", architecture="mlp"), model_id="m")


def test_a_generated_column_is_not_a_store(cli, tmp_path):
    path = tmp_path / "h.sqlite"
    HistoryStore(path)
    with sqlite3.connect(path) as connection:
        connection.execute("ALTER TABLE audits ADD COLUMN doubled REAL GENERATED ALWAYS AS (value * 2) VIRTUAL")
    connection.close()
    before = digest(path)
    refused(cli, ["history", "--history", path], "`--history`", "other columns")
    assert digest(path) == before


@pytest.mark.parametrize("content", [b"", b"my notes\n"])
def test_a_symlink_to_the_users_file_is_refused_and_the_file_untouched(cli, tmp_path, content):
    pytest.importorskip("torch")
    mine = tmp_path / "notes.txt"
    mine.write_bytes(content)
    link = tmp_path / "h.sqlite"
    link.symlink_to(mine)
    refused(cli, audit(tmp_path, link), "`--history`")
    assert mine.read_bytes() == content and not (tmp_path / "run").exists()
    refused(cli, ["history", "--history", link], "`--history`")
    assert mine.read_bytes() == content


def test_a_dangling_symlink_is_never_followed_to_create_a_store(cli, tmp_path):
    link = tmp_path / "h.sqlite"
    link.symlink_to(tmp_path / "target.sqlite")
    refused(cli, audit(tmp_path, link), "`--history`", "symlink")
    assert not (tmp_path / "target.sqlite").exists() and not (tmp_path / "run").exists()


def test_history_at_the_runs_results_json_is_refused_before_the_work(cli, tmp_path):
    output = tmp_path / "run"
    refused(cli, audit(tmp_path, output / "results.json", output), "`--history`", "`--output`")
    assert not output.exists()  # nothing created: neither the store nor the output


def test_history_at_an_earlier_runs_results_json_is_refused_untouched(cli, tmp_path):
    pytest.importorskip("torch")
    earlier = tmp_path / "earlier"
    code, _, err = cli(audit(tmp_path, tmp_path / "h.sqlite", earlier))
    assert code == 0, err
    results = earlier / "results.json"
    before = digest(results)
    refused(cli, audit(tmp_path, results, tmp_path / "next"), "`--history`")
    assert digest(results) == before and not (tmp_path / "next").exists()


@pytest.mark.parametrize("inside", [False, True])
def test_history_equal_to_or_inside_output_is_refused_cleanly(cli, tmp_path, inside):
    output = tmp_path / "run"
    history = output / "history.sqlite" if inside else output
    refused(cli, audit(tmp_path, history, output), "`--history`", "`--output`")
    assert not output.exists()


def test_a_store_written_before_lineages_is_read_and_migrated(cli, tmp_path):
    path = tmp_path / "h.sqlite"
    with sqlite3.connect(path) as connection:  # the version 1 schema, as privaudit wrote it
        connection.execute(
            "CREATE TABLE audits (id INTEGER PRIMARY KEY AUTOINCREMENT, model_id TEXT NOT NULL, audit TEXT NOT NULL, release TEXT,"
            " created_at TEXT NOT NULL, value REAL, label TEXT NOT NULL, kind TEXT NOT NULL, confidence REAL, valid INTEGER NOT NULL,"
            " schema_version INTEGER, results TEXT NOT NULL)"
        )
        connection.execute("CREATE INDEX audits_by_model ON audits (model_id, audit, id)")
        connection.execute("PRAGMA user_version = 1")
        connection.execute("PRAGMA application_id = 1346458948")
        data = blackbox_results(1.0, dataset="digits", architecture="mlp")
        connection.execute(
            "INSERT INTO audits (model_id, audit, release, created_at, value, label, kind, confidence, valid, schema_version, results)"
            " VALUES ('digits/mlp', 'blackbox', 'v1', '2026-01-01', 1.0, 'ε lower bound (GDP)', 'lower bound', 0.95, 1, 1, ?)",
            (json.dumps(data),),
        )
    connection.close()
    before = digest(path)
    code, out, err = cli(["history", "--history", path, "--json"])
    assert code == 0, err
    (row,) = json.loads(out)["audits"]
    assert row["value"] == 1.0 and row["lineage"] is None and digest(path) == before  # read as is, never written by a read
    HistoryStore(path).append(blackbox_results(2.5, dataset="digits", architecture="mlp"), model_id="digits/mlp", release="v2")
    records = HistoryStore(path).records()
    assert [r.value for r in records] == [1.0, 2.5] and records[1].lineage == "digits/mlp"
