"""More malformed input: every case exits 2 with one short "error: ..." line naming what is wrong, and leaves nothing behind.

Covers the readers (forged or mislabelled .npy files, deep or huge JSON),
output paths (a file, a path under a file, /proc, a folder that cannot be
written), the history store (foreign, damaged, hand-edited), damaged run
files of a resumable audit, type-confused results given to `report`, labels,
canary formats too large to enumerate, and PLD accounting too large to run.
Together with tests/test_malformed_inputs.py the suite holds at least 120
cases (issue 19's acceptance).
"""

from __future__ import annotations

import importlib.util
import io
import json
import math
import os
import sqlite3
import stat
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from privaudit.schemas import stamp_results

GOOD = "\n".join(str(v) for v in np.linspace(0, 1, 20)) + "\n"
DEEP = "[" * 100_000 + "]" * 100_000
HUGE = "x" * 5_000_000
MAX_LINE = 400  # an error line quotes at most ~80 characters of a value


def write(folder: Path, name: str, content) -> str:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content))
    return str(path)


def header(shape, descr="<f8", payload=b"", version=(1, 0)) -> bytes:
    buffer = io.BytesIO()
    (np.lib.format.write_array_header_1_0 if version == (1, 0) else np.lib.format.write_array_header_2_0)(
        buffer, {"descr": descr, "fortran_order": False, "shape": shape}
    )
    return buffer.getvalue() + payload


def savez_bytes(**arrays) -> bytes:
    buffer = io.BytesIO()
    np.savez(buffer, **arrays)
    return buffer.getvalue()


def bound(f: Path, in_content, *extra, in_name="i.npy") -> list:
    return ["bound", "--in", write(f, in_name, in_content), "--out", write(f, "o.txt", GOOD), "--delta", "1e-5", *extra]


def run_folder(f: Path, name: str, data) -> str:
    write(f / name, "results.json", data)
    return str(f / name)


def foreign_db(f: Path) -> str:
    path = f / "app.sqlite"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT)")
    connection.close()
    return str(path)


def store_with_row(f: Path, **columns) -> str:
    from privaudit.history import HistoryStore

    path = f / "h.sqlite"
    HistoryStore(path)
    row = {"model_id": "m", "audit": "blackbox", "created_at": "t", "value": 1.0, "label": "l", "kind": "estimate", "valid": 1, "results": "{}"}
    row.update(columns)
    with sqlite3.connect(path) as connection:
        connection.execute(f"INSERT INTO audits ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    connection.close()
    return str(path)


def newer_store(f: Path) -> str:
    from privaudit.history import HistoryStore

    path = f / "h.sqlite"
    HistoryStore(path)
    with sqlite3.connect(path) as connection:
        connection.execute("PRAGMA user_version = 99")
    connection.close()
    return str(path)


def corrupt_store(f: Path) -> str:
    from privaudit.history import HistoryStore

    path = f / "h.sqlite"
    store = HistoryStore(path)
    for value in range(50):
        store.append({"audit": "blackbox", "epsilon_lower_bound": float(value), "pad": "p" * 300}, model_id="m")
    data = bytearray(path.read_bytes())
    data[4096 : 3 * 4096] = b"\x5a" * (2 * 4096)
    path.write_bytes(bytes(data))
    return str(path)


BLACKBOX = {"dataset": "breast-cancer", "noise_multiplier": 0.5, "num_steps": 2, "num_models_per_side": 5, "seed": 3}


def blackbox_with_run_file(f: Path, content) -> list:
    write(f / "out" / "runs", "run-000000.json", content)
    return ["audit", "blackbox", "--config", write(f, "c.json", BLACKBOX), "--output", str(f / "out"), "--workers", "1", "--no-history"]


def run_file(**overrides) -> dict:
    from privaudit.audits.blackbox.audit import run_configs
    from privaudit.audits.blackbox.config import BlackBoxConfig

    data = {"index": 0, "config": run_configs(BlackBoxConfig(**BLACKBOX))[0], "result": {"score": 0.5}}
    data.update(overrides)
    return {key: value for key, value in data.items() if value is not ...}


def panoramia_members(f: Path, members: bytes) -> list:
    """`audit panoramia` on a real (tiny, untrained) model, so that only the members file is wrong."""
    import torch

    from privaudit.models.classifiers import build_classifier

    spec = {"architecture": "mlp", "input_dim": 2, "num_classes": 2}
    torch.save(build_classifier(**spec).state_dict(), f / "m.pt")
    return [
        "audit",
        "panoramia",
        "--model",
        str(f / "m.pt"),
        "--spec",
        write(f, "m.json", {**spec, "activation": "tanh"}),
        "--members",
        write(f, "m.npz", members),
        "--output",
        str(f / "out"),
        "--no-history",
    ]


def forged_npz() -> bytes:
    import zipfile

    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("x.npy", header((10**12, 2), payload=b"\0" * 16))
        archive.writestr("y.npy", header((4,), payload=b"\0" * 32))
    return buffer.getvalue()


def results(audit: str, **fields) -> dict:
    return stamp_results({"result_type": "R", "versions": {}, **fields}, audit=audit)


def report(f: Path, data) -> list:
    return ["report", run_folder(f, "run", data), "--output", str(f / "report.html")]


def unwritable(f: Path) -> Path:
    """A folder of mode 0o500: its owner may read and enter it, not write in it (as root, see `_as_a_user`)."""
    folder = f / "locked"
    folder.mkdir()
    folder.chmod(stat.S_IRUSR | stat.S_IXUSR)
    return folder


def pld(steps: int) -> list:
    return ["--method", "pld", "--sampling-prob", "1e-12", "--steps", str(steps)]


NO_TORCH = ("torch",)

# (id, build(folder) -> argv, expected text in the error line, modules made unimportable, marks)
CASES = [
    # .npy files: mislabelled archives, forged headers, dtypes (all through _io.read_numbers)
    ("npy-savez-archive", lambda f: bound(f, savez_bytes(x=np.arange(3.0))), "an .npz archive (np.savez)", (), ()),
    ("npy-header-1e12", lambda f: bound(f, header((10**12,), payload=b"\0" * 16)), "declares shape (1000000000000,)", (), ()),
    ("npy-header-2d-huge", lambda f: bound(f, header((10**6, 10**6), payload=b"\0" * 16)), "declares shape", (), ()),
    ("npy-extra-bytes", lambda f: bound(f, header((1,), payload=b"\0" * 24)), "declares shape (1,)", (), ()),
    ("npy-object-header", lambda f: bound(f, header((2,), descr="|O", payload=b"\0" * 16)), "Python objects", (), ()),
    ("npy-structured", lambda f: bound(f, header((2,), descr=[("a", "<f8")], payload=b"\0" * 16)), "expected real numbers", (), ()),
    ("npy-string-dtype", lambda f: bound(f, header((2,), descr="<U2", payload=b"\0" * 16)), "expected real numbers", (), ()),
    ("npy-bad-magic", lambda f: bound(f, b"NUMPY but not really" * 4), "not a .npy file", (), ()),
    ("npy-empty-file", lambda f: bound(f, b""), "`--in`: cannot read", (), ()),
    ("npy-version-9", lambda f: bound(f, b"\x93NUMPY\x09\x00" + b"\0" * 32), "unsupported .npy format version", (), ()),
    (
        "npy-code-in-header",
        lambda f: bound(f, b"\x93NUMPY\x01\x00" + (32).to_bytes(2, "little") + b"__import__('os').system('id')   "),
        "malformed .npy header",
        (),
        (),
    ),
    ("npy-v2-huge", lambda f: bound(f, header((2**40,), payload=b"\0" * 8, version=(2, 0))), "declares shape", (), ()),
    ("npy-nan-valid-header", lambda f: bound(f, header((2,), payload=np.array([1.0, np.nan]).tobytes())), "`--in` must contain only finite", (), ()),
    (
        "exposure-savez-references",
        lambda f: ["exposure", "--canaries", write(f, "c.txt", "1\n"), "--references", write(f, "r.npy", savez_bytes(a=np.ones(2)))],
        "`--references`: cannot read",
        (),
        (),
    ),
    (
        "exposure-huge-canaries",
        lambda f: ["exposure", "--canaries", write(f, "c.npy", header((10**12,))), "--references", write(f, "r.txt", GOOD)],
        "`--canaries`: cannot read",
        (),
        (),
    ),
    # text score files
    ("text-long-token", lambda f: bound(f, "1\n" + "z" * 100_000 + "\n", in_name="i.txt"), "100002 characters", (), ()),
    ("text-utf16", lambda f: bound(f, "1\n2\n".encode("utf-16"), in_name="i.txt"), "`--in`: cannot read", (), ()),
    ("csv-header-only", lambda f: bound(f, "score\n", in_name="i.csv"), "`--in` must hold at least", (), ()),
    ("csv-ragged", lambda f: bound(f, "1,2,3\n4,5,6\n", in_name="i.csv"), "one column or one row", (), ()),
    ("text-infinity-word", lambda f: bound(f, "1\ninfinity\n", in_name="i.txt"), "`--in` must contain only finite", (), ()),
    # bound options
    ("bound-seed-negative", lambda f: bound(f, GOOD, "--seed", "-1", in_name="i.txt"), "seed", (), ()),
    ("bound-delta-inf", lambda f: bound(f, GOOD, in_name="i.txt")[:-1] + ["inf"], "`--delta`", (), ()),
    ("bound-confidence-zero", lambda f: bound(f, GOOD, "--confidence", "0", in_name="i.txt"), "`--confidence` must be in (0, 1)", (), ()),
    ("bound-method", lambda f: bound(f, GOOD, "--method", "magic", in_name="i.txt"), "method", (), ()),
    ("bound-threshold-text", lambda f: bound(f, GOOD, "--threshold", "best-ish", in_name="i.txt"), "`--threshold`", (), ()),
    ("bound-pld-steps-negative", lambda f: bound(f, GOOD, "--method", "pld", "--steps", "-3", in_name="i.txt"), "`--steps`", (), ()),
    # configuration files
    ("config-deep-dpsgd", lambda f: ["audit", "dpsgd", "--config", write(f, "c.json", DEEP), "--output", str(f / "out")], "nested too deeply", (), ()),
    ("config-deep-blackbox", lambda f: ["audit", "blackbox", "--config", write(f, "c.json", DEEP), "--output", str(f / "out")], "nested too deeply", (), ()),
    ("config-deep-fl", lambda f: ["audit", "fl", "--config", write(f, "c.json", DEEP), "--output", str(f / "out")], "nested too deeply", (), ()),
    (
        "config-deep-secret-sharer",
        lambda f: ["audit", "secret-sharer", "--config", write(f, "c.json", DEEP), "--output", str(f / "out")],
        "nested too deeply",
        (),
        (),
    ),
    (
        "config-nan-constant",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", '{"delta": NaN}'), "--output", str(f / "out")],
        "NaN is not a JSON number",
        (),
        (),
    ),
    (
        "config-5mb-value",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {"dataset": HUGE}), "--output", str(f / "out")],
        "`dataset` must be one of",
        (),
        (),
    ),
    ("config-5mb-key", lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {HUGE: 1}), "--output", str(f / "out")], "unknown keys", (), ()),
    (
        "config-5mb-string-type",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {"num_steps": HUGE}), "--output", str(f / "out")],
        "`num_steps` must be an integer",
        (),
        (),
    ),
    ("config-empty-file", lambda f: ["audit", "blackbox", "--config", write(f, "c.json", ""), "--output", str(f / "out")], "`--config`", (), ()),
    (
        "config-utf16",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", json.dumps({"seed": 1}).encode("utf-16")), "--output", str(f / "out")],
        "`--config`",
        (),
        (),
    ),
    (
        "config-is-a-run-file",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {"index": 0, "config": {}, "result": {}}), "--output", str(f / "out")],
        "unknown keys",
        (),
        (),
    ),
    ("config-seed-negative", lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {"seed": -1}), "--output", str(f / "out")], "seed", (), ()),
    (
        "config-noise-zero",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {"noise_multiplier": 0}), "--output", str(f / "out")],
        "`noise_multiplier`",
        (),
        (),
    ),
    (
        "dpsgd-seed-negative",
        lambda f: ["audit", "dpsgd", "--config", write(f, "c.json", {"num_steps": 2}), "--output", str(f / "out"), "--seed", "-1"],
        "seed",
        (),
        (),
    ),
    # damaged run files of a resumable audit (runner/store.py)
    ("runfile-empty", lambda f: blackbox_with_run_file(f, ""), "run-000000.json", (), ()),
    ("runfile-not-json", lambda f: blackbox_with_run_file(f, "{half"), "run-000000.json", (), ()),
    ("runfile-no-config", lambda f: blackbox_with_run_file(f, run_file(config=...)), "run-000000.json", (), ()),
    ("runfile-list", lambda f: blackbox_with_run_file(f, [1, 2]), "run-000000.json", (), ()),
    ("runfile-deep", lambda f: blackbox_with_run_file(f, DEEP), "nested too deeply", (), ()),
    ("runfile-wrong-index", lambda f: blackbox_with_run_file(f, run_file(index=7)), "index 0", (), ()),
    ("runfile-result-not-object", lambda f: blackbox_with_run_file(f, run_file(result=[0.5])), "result object", (), ()),
    ("runfile-binary", lambda f: blackbox_with_run_file(f, b"\xff\xfe\x00garbage"), "not UTF-8", (), ()),
    # output paths
    (
        "blackbox-output-under-file",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {}), "--output", str(Path(write(f, "taken", "x")) / "sub")],
        "is a file",
        (),
        (),
    ),
    (
        "blackbox-output-proc",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {}), "--output", "/proc/self/privaudit-out"],
        "outside /proc",
        (),
        (),
    ),
    (
        "dpsgd-output-is-file",
        lambda f: ["audit", "dpsgd", "--config", write(f, "c.json", {"num_steps": 2}), "--output", write(f, "taken", "x")],
        "`--output` must be a directory",
        NO_TORCH,
        (),
    ),
    (
        "dpsgd-output-under-file",
        lambda f: ["audit", "dpsgd", "--config", write(f, "c.json", {"num_steps": 2}), "--output", str(Path(write(f, "taken", "x")) / "run")],
        "is a file",
        NO_TORCH,
        (),
    ),
    (
        "dpsgd-output-sys",
        lambda f: ["audit", "dpsgd", "--config", write(f, "c.json", {"num_steps": 2}), "--output", "/sys/privaudit-out"],
        "outside /sys",
        NO_TORCH,
        (),
    ),
    (
        "fl-output-is-file",
        lambda f: ["audit", "fl", "--config", write(f, "c.json", {}), "--output", write(f, "taken", "x")],
        "`--output` must be a directory",
        NO_TORCH,
        (),
    ),
    (
        "secret-sharer-output-proc",
        lambda f: ["audit", "secret-sharer", "--output", "/proc/self/ss", "--max-corpus-chars", "1000"],
        "outside /proc",
        NO_TORCH,
        (),
    ),
    (
        "panoramia-output-is-file",
        lambda f: ["audit", "panoramia", "--config", write(f, "c.json", {}), "--output", write(f, "taken", "x")],
        "`--output` must be a directory",
        NO_TORCH,
        (),
    ),
    ("demo-output-under-file", lambda f: ["demo", "--output", str(Path(write(f, "taken", "x")) / "demo")], "is a file", NO_TORCH, ()),
    ("demo-output-proc", lambda f: ["demo", "--output", "/proc/self/demo"], "outside /proc", NO_TORCH, ()),
    (
        "report-output-under-file",
        lambda f: ["report", run_folder(f, "run", results("x")), "--output", str(Path(write(f, "taken", "x")) / "r.html")],
        "is a file",
        (),
        (),
    ),
    ("report-output-proc", lambda f: ["report", run_folder(f, "run", results("x")), "--output", "/proc/self/r.html"], "outside /proc", (), ()),
    # labels for the history
    (
        "label-blank-model-id",
        lambda f: [
            "audit",
            "dpsgd",
            "--config",
            write(f, "c.json", {"num_steps": 2}),
            "--output",
            str(f / "out"),
            "--history",
            str(f / "h.sqlite"),
            "--model-id",
            " ",
        ],
        "--model-id",
        NO_TORCH,
        (),
    ),
    (
        "label-escape-release",
        lambda f: [
            "audit",
            "dpsgd",
            "--config",
            write(f, "c.json", {"num_steps": 2}),
            "--output",
            str(f / "out"),
            "--history",
            str(f / "h.sqlite"),
            "--release",
            "v1\x1b[2J",
        ],
        "--release",
        NO_TORCH,
        (),
    ),
    (
        "label-bidi-model-id",
        lambda f: [
            "audit",
            "blackbox",
            "--config",
            write(f, "c.json", {}),
            "--output",
            str(f / "out"),
            "--history",
            str(f / "h.sqlite"),
            "--model-id",
            "a\u202eb",
        ],
        "--model-id",
        NO_TORCH,
        (),
    ),
    # history stores
    ("history-foreign", lambda f: ["history", "--history", foreign_db(f)], "not a privaudit history store", (), ()),
    ("history-newer", lambda f: ["history", "--history", newer_store(f)], "newer privaudit", (), ()),
    ("history-corrupt-page", lambda f: ["history", "--history", corrupt_store(f)], "`--history`: cannot use", (), ()),
    ("history-text-value", lambda f: ["history", "--history", store_with_row(f, value="high")], "`value` must be a number", (), ()),
    ("history-blob-results", lambda f: ["history", "--history", store_with_row(f, results=b"\x00\x01")], "`results` must be text", (), ()),
    ("history-deep-results", lambda f: ["history", "--history", store_with_row(f, results=DEEP)], "nested too deeply", (), ()),
    ("history-json-foreign", lambda f: ["history", "--history", foreign_db(f), "--json"], "not a privaudit history store", (), ()),
    (
        "audit-history-foreign",
        lambda f: ["audit", "dpsgd", "--config", write(f, "c.json", {"num_steps": 2}), "--output", str(f / "out"), "--history", foreign_db(f)],
        "not a privaudit history store",
        (),
        (),
    ),
    (
        "audit-history-under-file",
        lambda f: [
            "audit",
            "blackbox",
            "--config",
            write(f, "c.json", {}),
            "--output",
            str(f / "out"),
            "--history",
            str(Path(write(f, "taken", "x")) / "h.sqlite"),
        ],
        "`--history`",
        (),
        (),
    ),
    (
        "audit-history-newer",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", {}), "--output", str(f / "out"), "--history", newer_store(f)],
        "newer privaudit",
        (),
        (),
    ),
    # results.json given to report
    ("report-empty-results", lambda f: report(f, ""), "is not valid JSON", (), ()),
    ("report-results-not-utf8", lambda f: report(f, b"\xff\xfe{}"), "`run`", (), ()),
    ("report-results-list", lambda f: report(f, [1, 2]), "must be a JSON object", (), ()),
    ("report-results-deep", lambda f: report(f, DEEP), "nested too deeply", (), ()),
    ("report-results-nan", lambda f: report(f, json.dumps(results("blackbox")).replace("{", '{"epsilon_lower_bound": NaN, ', 1)), "NaN", (), ()),
    ("report-step-bounds-null", lambda f: report(f, results("dpsgd", step_bounds={"gdp_clopper_pearson": None})), "step_bounds", (), ()),
    ("report-canaries-number", lambda f: report(f, results("secret-sharer", canaries=5)), "canaries", (), ()),
    ("report-target-number", lambda f: report(f, results("panoramia", targets={"t": {"audit": 5}})), "targets.t.audit", (), ()),
    ("report-config-text", lambda f: report(f, results("panoramia", config="rows")), "`config`", (), ()),
    ("report-fl-runs-number", lambda f: report(f, results("fl", runs=3)), "runs", (), ()),
    ("report-config-list", lambda f: report(f, results("dpsgd", config=[1, 2])), "config", (), ()),
    ("report-schema-version-text", lambda f: report(f, {**results("x"), "schema_version": "1"}), "schema_version", (), ()),
    ("report-run-is-a-file", lambda f: ["report", write(f, "notes.txt", "x"), "--output", str(f / "r.html")], "has no results.json", (), ()),
    # panoramia members (npz)
    ("members-nan-npz", lambda f: panoramia_members(f, savez_bytes(x=np.array([[np.nan, 1.0]] * 4), y=np.zeros(4))), "`--members`", (), ()),
    ("members-forged-npz", lambda f: panoramia_members(f, forged_npz()), "`--members`", (), ()),
    ("members-missing-key", lambda f: panoramia_members(f, savez_bytes(x=np.ones((4, 2)))), "`--members` must be an .npz with arrays 'x', 'y'", (), ()),
    ("demo-quick-seed-negative", lambda f: ["demo", "--quick", "--seed", "-1"], "seed", (), ()),
    # PLD accounting beyond what fits in about a minute is refused, with the estimate (it ran > 400 s before)
    (
        "bound-pld-steps-1e9",
        lambda f: bound(f, GOOD, *pld(10**9), in_name="i.txt"),
        "`--steps` 1000000000 with `--sampling-prob` 1e-12 needs a privacy-loss distribution of about",
        (),
        (),
    ),
    # output folders that cannot be written (mode 0o500), checked before any input is read or any work done
    (
        "bound-output-unwritable",
        lambda f: bound(f, GOOD, "--output", str(unwritable(f)), in_name="i.txt"),
        "`--output` must be a directory in a writable place",
        (),
        (),
    ),
    (
        "bound-output-under-unwritable",
        lambda f: bound(f, GOOD, "--output", str(unwritable(f) / "run"), in_name="i.txt"),
        "`--output` must be a directory in a writable place",
        (),
        (),
    ),
    (
        "blackbox-output-unwritable",
        lambda f: ["audit", "blackbox", "--config", write(f, "c.json", BLACKBOX), "--output", str(unwritable(f) / "out"), "--no-history"],
        "`--output` must be a directory in a writable place",
        NO_TORCH,
        (),
    ),
    (
        "dpsgd-output-unwritable",
        lambda f: ["audit", "dpsgd", "--config", write(f, "c.json", {"num_steps": 2}), "--output", str(unwritable(f)), "--no-history"],
        "`--output` must be a directory in a writable place",
        NO_TORCH,
        (),
    ),
    (
        "report-output-unwritable",
        lambda f: ["report", run_folder(f, "run", results("x")), "--output", str(unwritable(f) / "r.html")],
        "`--output` must be a file in a writable place",
        (),
        (),
    ),
    (
        "canaries-output-unwritable",
        lambda f: ["canaries", "insert", "--corpus", write(f, "corpus.txt", "hello\n" * 20), "--output", str(unwritable(f) / "c")],
        "`--output` must be a directory in a writable place",
        (),
        (),
    ),
    (
        "canaries-corpus-binary",
        lambda f: ["canaries", "insert", "--corpus", write(f, "corpus.txt", b"hello\n" * 20 + b"\x80\x81binary"), "--output", str(f / "c")],
        "`--corpus`: ",
        (),
        (),
    ),
    # the corpus size and canary formats given as flags
    (
        "secret-sharer-max-corpus-chars-negative",
        lambda f: ["audit", "secret-sharer", "--max-corpus-chars", "-5", "--output", str(f / "out"), "--no-history"],
        "`--max-corpus-chars` must be an integer in [1, inf), got -5",
        NO_TORCH,
        (),
    ),
    (
        "secret-sharer-template-digits-5000",
        lambda f: ["audit", "secret-sharer", "--template", "pin {digits:5000}", "--output", str(f / "out"), "--no-history"],
        "`--template` holes must total at most 256 symbols",
        NO_TORCH,
        (),
    ),
    (
        "secret-sharer-template-digits-1e8",
        lambda f: ["audit", "secret-sharer", "--template", "{digits:100000000}", "--output", str(f / "out"), "--no-history"],
        "`--template` holes must total at most 256 symbols",
        NO_TORCH,
        (),
    ),
    (
        "canaries-template-digits-5000",
        lambda f: ["canaries", "insert", "--corpus", write(f, "corpus.txt", "hello\n" * 20), "--output", str(f / "c"), "--template", "{digits:5000}"],
        "`--template` holes must total at most 256 symbols",
        (),
        (),
    ),
]


def _first_suite():
    """tests/test_malformed_inputs.py, loaded from its file (whatever pytest's import mode)."""
    spec = importlib.util.spec_from_file_location("_malformed_inputs_first_suite", Path(__file__).with_name("test_malformed_inputs.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_suite_has_at_least_60_cases():
    assert len(CASES) >= 60
    assert len({case[0] for case in CASES}) == len(CASES)


def test_the_two_malformed_input_suites_hold_at_least_120_distinct_cases():
    # issue 19's acceptance: the malformed-input suite grows to at least 120 cases (plus the property-based suite)
    first = _first_suite().CASES
    names = [case[0] for case in first] + [case[0] for case in CASES]
    assert len(names) >= 120, f"{len(first)} + {len(CASES)} cases"
    assert len(set(names)) == len(names), "a case of one suite repeats the other's name"


def _as_a_user(folder: Path):
    """``os.access`` that honours the owner's mode bits under ``folder`` even as root, as the checks see it for a user.

    Root may write anywhere whatever the mode, so a 0o500 folder is writable
    to a test run as root; the output checks ask ``os.access``, which this
    answers as it would for the folder's owner without root's privilege.
    """
    real_access = os.access

    def access(path, mode, *args, **kwargs):
        with_write = isinstance(mode, int) and mode & os.W_OK
        try:
            inside = Path(os.path.abspath(path)).is_relative_to(folder)
            locked = inside and not os.stat(path).st_mode & stat.S_IWUSR
        except (OSError, TypeError, ValueError):
            locked = False
        return False if with_write and locked else real_access(path, mode, *args, **kwargs)

    return access


def _tree(folder: Path) -> dict[str, bytes | None]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None) for p in folder.rglob("*")}


@pytest.mark.parametrize(("name", "build", "expected", "blocked"), [pytest.param(*case[:4], marks=case[4], id=case[0]) for case in CASES])
def test_malformed_input_exits_2_with_one_short_line_and_changes_nothing(cli, tmp_path, monkeypatch, name, build, expected, blocked):
    argv = build(tmp_path)
    before = _tree(tmp_path)
    if os.geteuid() == 0:  # permissions do not bind root: the checks see a 0o500 folder as its owner would
        monkeypatch.setattr(os, "access", _as_a_user(tmp_path))
    if blocked:  # scipy.stats probes sys.modules["torch"].Tensor when first imported: import it while torch is importable
        import scipy.stats  # noqa: F401
    for module in blocked:
        monkeypatch.setitem(sys.modules, module, None)
    code, stdout, stderr = cli(argv)
    assert code == 2, stderr[:500]
    assert stdout == ""
    lines = stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), stderr[:500]
    assert expected in lines[0], lines[0][:500]
    assert len(lines[0]) < MAX_LINE, f"{len(lines[0])} characters"
    assert _tree(tmp_path) == before  # nothing written, changed or left behind


def test_pld_accounting_is_refused_quickly_or_finishes_with_a_number(cli, tmp_path):
    """`bound --method pld --sampling-prob 1e-12`: 10^9 steps ran > 400 s and 10^5 > 150 s with memory growing (issue 19).

    By design (stats/pld.py) a mechanism whose privacy-loss distribution needs
    more than MAX_PLD_POINTS grid points even at the largest noise is refused
    with the estimate; 10^5 steps fit once the grid is coarsened, and run.
    """
    separable = [
        "--in",
        write(tmp_path, "i.txt", "\n".join(map(str, np.linspace(2, 3, 400)))),
        "--out",
        write(tmp_path, "o.txt", "\n".join(map(str, np.linspace(0, 1, 400)))),
    ]
    start = time.monotonic()
    code, stdout, stderr = cli(["bound", *separable, "--delta", "1e-5", *pld(10**9), "--json"])
    assert code == 2 and stdout == "" and len(stderr.splitlines()) == 1 and "`--steps` 1000000000" in stderr
    assert time.monotonic() - start < 20
    start = time.monotonic()
    code, stdout, stderr = cli(["bound", *separable, "--delta", "1e-5", *pld(10**5), "--json"])
    assert code == 0, stderr[:500]
    assert time.monotonic() - start < 120  # about 20 s on two cores
    epsilon = json.loads(stdout)["epsilon"]
    # the canary enters one of 10^5 steps with probability 1e-7 < δ: the true ε(δ) is 0, and so is any valid lower bound
    assert math.isfinite(epsilon) and epsilon == 0.0


def test_a_zero_max_corpus_chars_is_refused_not_ignored(cli, tmp_path, monkeypatch):
    from privaudit.audits.registry import get_audit

    def ran(*args, **kwargs):
        raise AssertionError("the audit ran: --max-corpus-chars 0 was ignored")

    monkeypatch.setattr(type(get_audit("secret-sharer")), "run", ran)  # fails fast instead of training for minutes
    code, stdout, stderr = cli(["audit", "secret-sharer", "--max-corpus-chars", "0", "--output", tmp_path / "out", "--no-history"])
    assert code == 2 and stdout == "" and "`--max-corpus-chars` must be an integer in [1, inf), got 0" in stderr
