"""File readers and output paths: .npy headers checked before allocation, savez archives refused, bounded JSON, checked --output, no staging folder left by a killed run."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from cli_helpers import subprocess_env

from privaudit._core.files import (
    check_output_dir,
    check_output_file,
    read_json,
    remove_stale_staging,
    staged_output,
)
from privaudit._core.messages import describe_value
from privaudit._core.readers import read_npz, read_numbers


def npy_with_header(shape, descr="<f8", payload=b"", version=(1, 0)) -> bytes:
    """A .npy file whose header declares ``shape`` and ``descr``, followed by ``payload`` (built by numpy's own header writer)."""
    buffer = io.BytesIO()
    header = {"descr": descr, "fortran_order": False, "shape": shape}
    writer = np.lib.format.write_array_header_1_0 if version == (1, 0) else np.lib.format.write_array_header_2_0
    writer(buffer, header)
    return buffer.getvalue() + payload


# --- .npy ------------------------------------------------------------------------------------------


def test_a_savez_archive_named_npy_is_refused(tmp_path):
    np.savez(tmp_path / "scores", x=np.arange(3.0))
    (tmp_path / "scores.npz").rename(tmp_path / "scores.npy")
    with pytest.raises(ValueError, match=r"`--in`: cannot read .*an \.npz archive \(np\.savez\), not one \.npy array"):
        read_numbers(tmp_path / "scores.npy", "--in")


@pytest.mark.parametrize("count", [10**12, 2**62, 10**6])
def test_a_header_declaring_more_values_than_the_file_holds_is_refused_before_allocating(tmp_path, count):
    path = tmp_path / "forged.npy"
    path.write_bytes(npy_with_header((count,), payload=np.arange(4.0).tobytes()))
    start = time.monotonic()
    with pytest.raises(ValueError, match=rf"declares shape \({count},\) \({count} values, {count * 8} bytes\) but the file holds 32 bytes"):
        read_numbers(path, "--in")
    assert time.monotonic() - start < 1  # nothing of 8 TB was allocated or read


def test_a_header_declaring_fewer_values_than_the_file_holds_is_refused(tmp_path):
    path = tmp_path / "extra.npy"
    path.write_bytes(npy_with_header((2,), payload=np.arange(4.0).tobytes()))
    with pytest.raises(ValueError, match="declares shape .2,. .2 values, 16 bytes. but the file holds 32 bytes"):
        read_numbers(path, "--in")


@pytest.mark.parametrize(
    ("descr", "message"),
    [("|O", "Python objects"), ("<c16", "expected real numbers"), ("<U4", "expected real numbers"), ([("a", "<f8")], "expected real numbers")],
)
def test_headers_of_non_numeric_dtypes_are_refused(tmp_path, descr, message):
    path = tmp_path / "bad.npy"
    path.write_bytes(npy_with_header((2,), descr=descr, payload=b"\0" * 64))
    with pytest.raises(ValueError, match=message):
        read_numbers(path, "--in")


def test_malformed_headers_and_magic(tmp_path):
    cases = {
        "nomagic.npy": b"\x00" * 64,
        "version.npy": b"\x93NUMPY\x07\x00" + b"\0" * 64,
        "dict.npy": b"\x93NUMPY\x01\x00" + (16).to_bytes(2, "little") + b"{'descr': 1}    ",
        "code.npy": b"\x93NUMPY\x01\x00" + (32).to_bytes(2, "little") + b"__import__('os').system('x')   ",
        "empty.npy": b"",
    }
    for name, data in cases.items():
        (tmp_path / name).write_bytes(data)
        with pytest.raises(ValueError, match="`--in`: cannot read"):
            read_numbers(tmp_path / name, "--in")


def test_valid_arrays_of_every_layout_read_as_numpy_reads_them(tmp_path):
    rng = np.random.default_rng(0)
    values = rng.normal(size=7)
    for name, array in {
        "flat": values,
        "column": values[:, None],
        "row": values[None, :],
        "fortran": np.asfortranarray(values[:, None]),
        "int": np.arange(5, dtype=np.int16),
        "float32": values.astype(np.float32),
        "big-endian": values.astype(">f8"),
    }.items():
        np.save(tmp_path / f"{name}.npy", array)
        assert np.array_equal(read_numbers(tmp_path / f"{name}.npy", "--in"), np.load(tmp_path / f"{name}.npy").ravel().astype(np.float64)), name
    (tmp_path / "v2.npy").write_bytes(npy_with_header((3,), payload=np.array([1.0, 2.0, 3.0]).tobytes(), version=(2, 0)))
    assert read_numbers(tmp_path / "v2.npy", "--in").tolist() == [1.0, 2.0, 3.0]


def test_text_files_have_a_size_limit_and_long_tokens_are_cut(tmp_path, monkeypatch):
    path = tmp_path / "scores.txt"
    path.write_text("1\n" + "x" * 100_000 + "\n")
    with pytest.raises(ValueError) as error:
        read_numbers(path, "--in")
    assert len(str(error.value)) < 250 and "100002 characters" in str(error.value)
    monkeypatch.setattr("privaudit._core.readers.MAX_TEXT_BYTES", 10)
    path.write_text("1\n2\n3\n4\n5\n6\n")
    with pytest.raises(ValueError, match="is larger than 10 bytes"):
        read_numbers(path, "--in")


# --- .npz ------------------------------------------------------------------------------------------


def test_read_npz_checks_keys_members_and_values(tmp_path):
    good = tmp_path / "good.npz"
    np.savez(good, x=np.ones((3, 2)), y=np.array([0, 1, 0]))
    arrays = read_npz(good, "--members", ("x", "y"))
    assert arrays["x"].shape == (3, 2) and arrays["y"].tolist() == [0, 1, 0]
    with pytest.raises(ValueError, match="`--members` must be an .npz with arrays 'x', 'z', got \\['x', 'y'\\]"):
        read_npz(good, "--members", ("x", "z"))
    np.savez(tmp_path / "nan.npz", x=np.array([[np.nan]]), y=np.array([0]))
    with pytest.raises(ValueError, match="array 'x' .* must contain only finite numbers"):
        read_npz(tmp_path / "nan.npz", "--members", ("x", "y"))
    forged = tmp_path / "forged.npz"
    with zipfile.ZipFile(forged, "w") as archive:
        archive.writestr("x.npy", npy_with_header((10**12, 2), payload=b"\0" * 16))
        archive.writestr("y.npy", npy_with_header((1,), payload=b"\0" * 8))
    with pytest.raises(ValueError, match="declares shape"):
        read_npz(forged, "--members", ("x", "y"))
    with zipfile.ZipFile(tmp_path / "objects.npz", "w") as archive:
        archive.writestr("x.npy", npy_with_header((1,), descr="|O", payload=b"\0" * 8))
    with pytest.raises(ValueError, match="Python objects"):
        read_npz(tmp_path / "objects.npz", "--members", ("x",))
    (tmp_path / "text.npz").write_text("not a zip")
    with pytest.raises(ValueError, match="cannot read .* as an .npz archive"):
        read_npz(tmp_path / "text.npz", "--members", ("x",))
    with pytest.raises(ValueError, match="file not found"):
        read_npz(tmp_path / "none.npz", "--members", ("x",))


# --- JSON ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"a": ' * 50_000 + "1" + "}" * 50_000, "nested too deeply"),
        ('{"a": NaN}', "NaN is not a JSON number"),
        ('{"a": -Infinity}', "-Infinity is not a JSON number"),
        ("{oops", "is not valid JSON"),
        (b"\xff\xfe{}", "not UTF-8 text"),
        ("", "is not valid JSON"),
    ],
)
def test_read_json_refuses_with_one_short_message(tmp_path, content, message):
    path = tmp_path / "c.json"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError, match=message) as error:
        read_json(path, "--config")
    assert str(error.value).startswith("`--config`") and len(str(error.value)) < 300


def test_read_json_size_limit_bom_and_missing(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"v": "x" * 1000}))
    with pytest.raises(ValueError, match="larger than 100 bytes"):
        read_json(path, "--config", max_bytes=100)
    path.write_bytes('\ufeff{"a": 1}'.encode())
    assert read_json(path) == {"a": 1}
    with pytest.raises(ValueError, match="file not found"):
        read_json(tmp_path / "none.json")
    with pytest.raises(ValueError, match="is a directory"):
        read_json(tmp_path)


def test_describe_value_cuts_long_values_and_escapes_controls():
    shown = describe_value("y" * 5_000_000)
    assert len(shown) < 120 and shown.startswith("'yyyy") and "5000002 characters" in shown
    assert describe_value("\x1b[2J") == "'\\x1b[2J'"


# --- output paths ----------------------------------------------------------------------------------


def test_check_output_dir_refuses_files_system_trees_and_read_only_places(tmp_path):
    (tmp_path / "file").write_text("x")
    assert check_output_dir(tmp_path / "new" / "deeper") == tmp_path / "new" / "deeper"
    assert check_output_dir(tmp_path) == tmp_path
    cases = {
        str(tmp_path / "file"): "must be a directory, got the file",
        str(tmp_path / "file" / "sub"): "is a file",
        str(tmp_path / "file" / "a" / "b"): "is a file",
        "/proc/self/out": "outside /proc",
        "/sys/kernel/out": "outside /sys",
        "/dev/shm/../privaudit-out": "outside /dev",
        "": "must be a directory path",
    }
    for path, message in cases.items():
        with pytest.raises(ValueError, match=message):
            check_output_dir(path, "--output")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file"]  # nothing was created


def test_check_output_dir_refuses_an_unwritable_folder(tmp_path, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if Path(path) == locked else real_access(path, mode, **kw))
    with pytest.raises(ValueError, match="`--output` must be a directory in a writable place"):
        check_output_dir(locked / "run")
    with pytest.raises(ValueError, match="`--output` must be a file in a writable place"):
        check_output_file(locked / "report.html")


def test_check_output_file(tmp_path):
    assert check_output_file(tmp_path / "r.html") == tmp_path / "r.html"
    for path, message in ((tmp_path, "got the directory"), ("/proc/self/r.html", "outside /proc"), ("", "must be a file path")):
        with pytest.raises(ValueError, match=message):
            check_output_file(path)


# --- staging folders -------------------------------------------------------------------------------

KILLED_WRITER = """
import os, signal, sys
from privaudit._core.files import staged_output
with staged_output(sys.argv[1]) as scratch:
    (scratch / "results.json").write_text("{}")
    print(scratch, flush=True)
    os.kill(os.getpid(), signal.SIGKILL)
"""

LIVE_WRITER = """
import sys, time
from privaudit._core.files import staged_output
with staged_output(sys.argv[1]) as scratch:
    print(scratch, flush=True)
    time.sleep(60)
"""


def _python(code: str, *args) -> subprocess.Popen:
    env = subprocess_env()
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdout=subprocess.PIPE, text=True, env=env)


def test_a_killed_run_leaves_a_staging_folder_that_the_next_run_removes(tmp_path):
    target = tmp_path / "run"
    killed = _python(KILLED_WRITER, target)
    stale = Path(killed.stdout.readline().strip())
    assert killed.wait() == -signal.SIGKILL
    assert stale.is_dir() and stale.parent == tmp_path
    with staged_output(target) as scratch:
        assert not stale.exists()
        (scratch / "results.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and sorted(p.name for p in target.iterdir()) == ["results.json"]


def test_a_live_concurrent_run_and_look_alike_user_files_are_kept(tmp_path):
    live = _python(LIVE_WRITER, tmp_path / "run")
    try:
        running = Path(live.stdout.readline().strip())
        # look-alikes: a file with the pattern's name, a folder whose PID (1) is alive, a folder of another naming scheme
        (tmp_path / ".run.privaudit-staging-999999999-abc").write_text("a user's file")
        (tmp_path / ".run.privaudit-staging-1-abc").mkdir()
        (tmp_path / ".run-old").mkdir()
        (tmp_path / "notes.privaudit-staging-5-x").mkdir()
        before = sorted(p.name for p in tmp_path.iterdir())
        assert remove_stale_staging(tmp_path) == []
        with staged_output(tmp_path / "run") as scratch:
            (scratch / "a.json").write_text("{}")
        assert running.is_dir()
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(set(before) | {"run"})
    finally:
        live.kill()
        live.wait()
    # the live run is now dead: its folder goes, the look-alikes stay
    assert remove_stale_staging(tmp_path, "run") == [running]
    assert (tmp_path / ".run.privaudit-staging-1-abc").is_dir() and (tmp_path / ".run.privaudit-staging-999999999-abc").is_file()


def test_a_folder_without_a_lock_is_removed_only_when_its_pid_is_dead(tmp_path):
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    (tmp_path / f".run.privaudit-staging-{dead.pid}-xyz").mkdir()
    (tmp_path / f".run.privaudit-staging-{os.getppid()}-xyz").mkdir()
    assert remove_stale_staging(tmp_path) == [tmp_path / f".run.privaudit-staging-{dead.pid}-xyz"]
    assert (tmp_path / f".run.privaudit-staging-{os.getppid()}-xyz").is_dir()


def test_staged_output_success_and_failure_leave_only_the_output(tmp_path):
    with staged_output(tmp_path / "run") as scratch:
        (scratch / "results.json").write_text("{}")
    with pytest.raises(RuntimeError), staged_output(tmp_path / "other") as scratch:
        (scratch / "x").write_text("1")
        raise RuntimeError("failed")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"] and [p.name for p in (tmp_path / "run").iterdir()] == ["results.json"]


# --- property test: read_numbers on generated contents ---------------------------------------------

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

NUMBER_TEXT = st.lists(
    st.one_of(st.floats().map(repr), st.integers().map(str), st.sampled_from(["", "#c", "nan", "1e999", "x", "1,2", '"3"', "\ufeff1", " 4 "])), max_size=8
).map("\n".join)


def _npy_variants(data: bytes) -> bytes:
    return data


@settings(max_examples=150, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    suffix=st.sampled_from([".npy", ".csv", ".txt"]),
    content=st.one_of(st.binary(max_size=200), NUMBER_TEXT.map(str.encode)),
    prefix=st.sampled_from([b"", b"\x93NUMPY\x01\x00", b"\x93NUMPY\x02\x00", b"PK\x03\x04", npy_with_header((3,))[:60]]),
)
def test_read_numbers_returns_finite_floats_or_raises_a_named_value_error(tmp_path_factory, suffix, content, prefix):
    path = tmp_path_factory.mktemp("gen") / f"data{suffix}"
    path.write_bytes(prefix + content)
    try:
        values = read_numbers(path, "--in")
    except ValueError as error:
        assert str(error).startswith("`--in`"), str(error)
        assert len(str(error)) < 600
    else:
        assert values.dtype == np.float64 and values.ndim == 1 and np.isfinite(values).all() and values.size >= 1


@settings(max_examples=60, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    shape=st.lists(st.integers(0, 2**40), min_size=0, max_size=3).map(tuple),
    descr=st.sampled_from(["<f8", "<i4", "|u1", ">f4", "<f2"]),
    payload=st.binary(max_size=64),
)
def test_read_numbers_on_forged_headers_never_allocates_the_declared_size(tmp_path_factory, shape, descr, payload):
    path = tmp_path_factory.mktemp("hdr") / "x.npy"
    path.write_bytes(npy_with_header(shape, descr=descr, payload=payload))
    try:
        values = read_numbers(path, "--in")
    except ValueError as error:
        assert str(error).startswith("`--in`")
    else:
        assert values.size * np.dtype(descr).itemsize == len(payload)
