"""The history store under hostile conditions: control characters, foreign or damaged databases, hand-edited rows, a lock held by another process."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typed_results import blackbox_results

from privaudit._core.messages import printable
from privaudit.history import (
    SCHEMA_VERSION,
    HistoryLockedError,
    HistoryStore,
    check_label,
    record_audit,
)

ESCAPES = ["\x1b[2J", "\x1b]0;owned\x07", "a\rb", "line\nbreak", "bell\x07", "\x9b31m", "rtl\u202eevil", "nul\x00"]


def results(epsilon: float = 1.0) -> dict:
    return blackbox_results(epsilon, dataset="digits", architecture="mlp")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_error_line(stderr: str, *needles: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr
    assert all(needle in lines[0] for needle in needles), lines[0]
    assert "Traceback" not in stderr
    return lines[0]


# --- labels ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ESCAPES)
@pytest.mark.parametrize("field", ["model_id", "release"])
def test_control_characters_are_refused_when_stored(tmp_path, field, text):
    store = HistoryStore(tmp_path / "h.sqlite")
    arguments = {"model_id": "m", "release": "v1", field: f"v{text}x"}
    with pytest.raises(ValueError, match=f"`{field}` must be text without control characters"):
        store.append(results(), **arguments)
    assert store.records() == []


@pytest.mark.parametrize("value", ["", "   ", "x" * 201, 5])
def test_blank_long_or_non_text_labels_are_refused(value):
    with pytest.raises(ValueError, match="`--model-id` must"):
        check_label(value, "--model-id")


def test_printable_labels_pass_unchanged():
    for label in ("v1.2", "résumé/模型", "digits/mlp", "x" * 200):
        assert check_label(label, "--release") == label and printable(label) == label


def test_printable_escapes_every_control_character():
    for text in ESCAPES:
        shown = printable(text)
        assert not any(ord(c) < 32 or 0x7F <= ord(c) <= 0x9F or c == "\u202e" for c in shown), shown
    assert printable("\x1b[2J") == "\\x1b[2J" and printable("\u202e") == "\\u202e"


def _inject(path: Path, **columns) -> None:
    """A row written by another program, bypassing the store's checks."""
    row = {
        "model_id": "m",
        "audit": "blackbox",
        "release": None,
        "created_at": "2024-01-01",
        "value": 1.0,
        "label": "ε",
        "kind": "lower bound",
        "confidence": 0.95,
        "valid": 1,
        "schema_version": 1,
        "results": json.dumps(results()),
    }
    row.update(columns)
    with sqlite3.connect(path) as connection:
        connection.execute(f"INSERT INTO audits ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    connection.close()


def test_history_command_prints_no_escape_sequence_from_a_stored_row(cli, tmp_path):
    path = tmp_path / "h.sqlite"
    HistoryStore(path)
    _inject(path, model_id="\x1b[31mred\x1b[0m", release="v1\x1b]0;title\x07", label="[bold]markup[/bold]")
    code, out, err = cli(["history", "--history", path])
    assert code == 0, err
    assert "\x1b" not in out and "\x07" not in out
    assert "[bold]markup[/bold]" in out


def test_an_audit_refuses_a_control_character_in_model_id_before_running(cli, tmp_path, monkeypatch):
    import scipy.stats  # noqa: F401  # first imported with torch blocked, it reads sys.modules["torch"].Tensor and fails

    monkeypatch.setitem(sys.modules, "torch", None)  # the label must be refused before the audit needs torch
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"num_steps": 2, "canaries_per_step": 5, "num_slots": 20}))
    code, out, err = cli(["audit", "dpsgd", "--config", config, "--output", tmp_path / "run", "--history", tmp_path / "h.sqlite", "--model-id", "m\x1b[2J"])
    assert code == 2 and out == ""
    one_error_line(err, "--model-id")
    assert not (tmp_path / "run").exists()


# --- foreign, versioned and damaged databases --------------------------------------------------


def _foreign(path: Path) -> str:
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
        connection.execute("INSERT INTO customers (name) VALUES ('alice')")
    connection.close()
    return digest(path)


def test_history_command_never_writes_to_a_foreign_database(cli, tmp_path):
    path = tmp_path / "app.sqlite"
    before = _foreign(path)
    code, out, err = cli(["history", "--history", path])
    assert code == 2 and out == ""
    one_error_line(err, "`--history`", "not a privaudit history store", "customers")
    assert digest(path) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["app.sqlite"]  # no journal left either
    with pytest.raises(ValueError, match="not a privaudit history store"):
        record_audit(results(), history=path)
    assert digest(path) == before


def test_other_application_and_newer_versions_are_refused_untouched(tmp_path):
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as connection:
        connection.execute("PRAGMA application_id = 1234")
    connection.close()
    newer = tmp_path / "newer.sqlite"
    HistoryStore(newer)
    with sqlite3.connect(newer) as connection:
        connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    connection.close()
    for path, message in ((other, "application_id 1234"), (newer, "newer privaudit")):
        before = digest(path)
        with pytest.raises(ValueError, match=message):
            HistoryStore(path)
        assert digest(path) == before


def test_an_empty_file_is_refused_and_a_legacy_store_read_without_writing(cli, tmp_path):
    empty = tmp_path / "empty.sqlite"
    empty.write_bytes(b"")
    code, out, err = cli(["history", "--history", empty, "--json"])
    assert code == 2 and out == ""  # an empty file is the user's, not a store: never taken over (issue 44, item 10)
    one_error_line(err, "`--history`", "not a privaudit history store")
    assert empty.read_bytes() == b""
    # a store written before stores were versioned: same table, user_version 0
    legacy = tmp_path / "legacy.sqlite"
    HistoryStore(legacy)
    _inject(legacy)
    with sqlite3.connect(legacy) as connection:
        connection.execute("PRAGMA user_version = 0")
        connection.execute("PRAGMA application_id = 0")
    connection.close()
    before = digest(legacy)
    assert [r.value for r in HistoryStore(legacy).records()] == [1.0] and digest(legacy) == before
    HistoryStore(legacy).append(results(2.0), model_id="m")  # the first write stamps the version
    with sqlite3.connect(legacy) as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    connection.close()
    assert [r.value for r in HistoryStore(legacy).records()] == [1.0, 2.0]


def test_a_missing_store_is_created_only_when_asked(tmp_path):
    with pytest.raises(ValueError, match="no results store"):
        HistoryStore(tmp_path / "none.sqlite", create=False)
    assert not (tmp_path / "none.sqlite").exists()
    HistoryStore(tmp_path / "new" / "h.sqlite")
    with sqlite3.connect(tmp_path / "new" / "h.sqlite") as connection:
        assert connection.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    connection.close()


def test_a_corrupt_page_is_a_clear_error(cli, tmp_path):
    path = tmp_path / "h.sqlite"
    store = HistoryStore(path)
    for epsilon in range(200):  # several pages of rows
        store.append(results(float(epsilon)), model_id="m")
    data = bytearray(path.read_bytes())
    page = 4096
    assert len(data) > 4 * page
    data[page : 3 * page] = b"\xa5" * (2 * page)  # garbage over the table's root page and the next one
    path.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="`--history`: cannot use"):
        HistoryStore(path).records()
    code, out, err = cli(["history", "--history", path])
    assert code == 2 and out == ""
    one_error_line(err, "`--history`")


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        ({"value": "abc"}, "`value` must be a number or empty, got 'abc'"),
        ({"confidence": b"\x00\x01"}, "`confidence` must be a number"),
        ({"results": "{not json"}, "`results` is not valid JSON"),
        ({"results": "[1, 2]"}, "`results` must be a JSON object"),
        ({"results": "[" * 100_000 + "]" * 100_000}, "nested too deeply"),
        ({"valid": 7}, "`valid` must be 0 or 1"),
        ({"label": b"\xff\x00"}, "`label` must be text"),
    ],
)
def test_a_hand_edited_row_is_a_clear_error(cli, tmp_path, columns, message):
    path = tmp_path / "h.sqlite"
    HistoryStore(path).append(results(), model_id="m")
    _inject(path, **columns)
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace("[", r"\[")):
        HistoryStore(path).records()
    code, out, err = cli(["history", "--history", path])
    assert code == 2 and out == ""
    one_error_line(err, "`--history`", "row 2")


def test_non_finite_stored_values_read_as_missing(tmp_path):
    path = tmp_path / "h.sqlite"
    HistoryStore(path)
    _inject(path, value=float("inf"))
    (record,) = HistoryStore(path).records()
    assert record.value is None


# --- a store locked by another process ---------------------------------------------------------

LOCKER = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None)
connection.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
connection.execute("COMMIT")
"""


def _hold_lock(path: Path, seconds: float) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", LOCKER, str(path), str(seconds)], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "locked"
    return process


def test_a_store_locked_longer_than_the_wait_raises_a_bounded_locked_error(tmp_path):
    path = tmp_path / "h.sqlite"
    store = HistoryStore(path, lock_wait=0.6)
    locker = _hold_lock(path, 30)
    try:
        start = time.monotonic()
        with pytest.raises(HistoryLockedError, match="stayed locked by another process for 0.6 s; the audit was not recorded"):
            store.append(results(), model_id="m")
        assert time.monotonic() - start < 3
    finally:
        locker.kill()
        locker.wait()
    assert issubclass(HistoryLockedError, ValueError)  # unwired, a command still ends with one line, not a traceback
    assert store.records() == []


def test_a_lock_released_within_the_wait_is_retried_and_the_audit_recorded(tmp_path):
    path = tmp_path / "h.sqlite"
    store = HistoryStore(path, lock_wait=10)
    locker = _hold_lock(path, 0.8)
    try:
        start = time.monotonic()
        store.append(results(3.0), model_id="m")
        waited = time.monotonic() - start
    finally:
        locker.wait()
    assert 0.3 < waited < 5
    assert [r.value for r in store.records()] == [3.0]


@pytest.mark.parametrize("wait", [-1.0, float("nan")])
def test_lock_wait_is_checked(tmp_path, wait):
    with pytest.raises(ValueError, match="lock_wait"):
        HistoryStore(tmp_path / "h.sqlite", lock_wait=wait)


def test_an_audit_whose_store_stays_locked_warns_exits_0_and_keeps_results_json(cli, tmp_path, monkeypatch):
    """The CLI's warning path (cli/options.py `history_recorder`): the store is locked by another process as the audit finishes."""
    pytest.importorskip("torch")
    path = tmp_path / "h.sqlite"
    HistoryStore(path).append(results(2.0), model_id="earlier")
    # a short wait (5 s by default), and the lock taken by another process just as the finished audit appends
    monkeypatch.setattr(HistoryStore.__init__, "__kwdefaults__", {**HistoryStore.__init__.__kwdefaults__, "lock_wait": 0.3})
    lockers: list[subprocess.Popen] = []
    real_append = HistoryStore.append

    def append_while_locked(self, *args, **kwargs):
        lockers.append(_hold_lock(self.path, 60))
        return real_append(self, *args, **kwargs)

    monkeypatch.setattr(HistoryStore, "append", append_while_locked)
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"num_steps": 3, "canaries_per_step": 10, "num_slots": 100}))
    try:
        code, out, err = cli(["audit", "dpsgd", "--config", config, "--output", tmp_path / "run", "--history", path, "--json"])
    finally:
        for locker in lockers:
            locker.kill()
            locker.wait()
    assert len(lockers) == 1
    assert code == 0, err[:500]
    warnings = [line for line in err.splitlines() if line.startswith("warning: ")]
    assert warnings == [f"warning: `--history`: {str(path)!r} stayed locked by another process for 0.3 s; the audit was not recorded"], err[:500]
    kept = json.loads((tmp_path / "run" / "results.json").read_text())
    assert kept["audit"] == "dpsgd" and json.loads(out)["audit"] == "dpsgd"
    assert [record.model_id for record in HistoryStore(path).records()] == ["earlier"]  # not recorded, nothing damaged
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no staging folder left behind
