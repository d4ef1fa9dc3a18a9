"""Every audit says where its history went: one line, ``history: appended to PATH (--no-history to skip)``; none with --no-history."""

from __future__ import annotations

import sqlite3

from typed_results import blackbox_results

from privaudit.cli.options import history_recorder


def test_an_appended_audit_prints_one_line_naming_the_store_and_the_way_to_skip(tmp_path, capsys):
    store = tmp_path / "h.sqlite"
    record = history_recorder(store, False, "my-model", "v1")
    record(blackbox_results(1.0, dataset="digits", architecture="mlp"))
    assert capsys.readouterr().err.splitlines() == [f"history: appended to {store} (--no-history to skip)"]
    with sqlite3.connect(store) as connection:  # and it was appended
        assert connection.execute("select count(*) from sqlite_master").fetchone()[0] >= 1


def test_no_history_prints_nothing_and_writes_nothing(tmp_path, capsys):
    record = history_recorder(tmp_path / "h.sqlite", True, None, None)
    record(blackbox_results(1.0, dataset="digits", architecture="mlp"))
    assert capsys.readouterr().err == "" and not (tmp_path / "h.sqlite").exists()


def test_the_environment_variable_moves_the_store(tmp_path, capsys, monkeypatch):
    moved = tmp_path / "elsewhere" / "history.sqlite"
    monkeypatch.setenv("PRIVAUDIT_HISTORY", str(moved))
    record = history_recorder(None, False, None, None)
    record(blackbox_results(1.0, dataset="digits", architecture="mlp"))
    assert capsys.readouterr().err.strip() == f"history: appended to {moved} (--no-history to skip)" and moved.is_file()
