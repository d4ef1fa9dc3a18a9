"""The user's own code failing (--train, --mechanism, a model factory, --synthetic-train): one error line naming the option, exit 2.

Whatever the user's function does (raise KeyError, OSError, MemoryError,
RecursionError, raise at import, call sys.exit(0), or end a worker process
with os._exit), the command prints one ``error:`` line naming the option,
the function and what happened, and exits 2: never a traceback, never a
silent exit 0. ``--verbose`` adds the traceback.
"""

from __future__ import annotations

import itertools
import textwrap

import numpy as np
import pytest
from cli_helpers import run_cli

pytest.importorskip("sklearn")

_COUNTER = itertools.count()

# the body of a --train function: `x_train` and `y_train` as the audit passes them
FAILURES = {
    "KeyError": ("return {}['mean radius']", "raised KeyError: 'mean radius'"),
    "OSError": ("raise OSError(28, 'No space left on device')", "raised OSError: [Errno 28] No space left on device"),
    "MemoryError": ("raise MemoryError()", "raised MemoryError"),
    "RecursionError": ("def deep(n):\n        return deep(n + 1)\n    return deep(0)", "raised RecursionError: maximum recursion depth exceeded"),
    "sys.exit(0)": ("import sys\n    sys.exit(0)", "called sys.exit(0)"),
    "sys.exit(3)": ("import sys\n    sys.exit(3)", "called sys.exit(3)"),
}

TRAIN_OK = """
from sklearn.linear_model import LogisticRegression
def train(x_train, y_train, *, seed):
    return LogisticRegression(max_iter=200).fit(x_train, y_train)
"""


def _module(folder, monkeypatch, source: str) -> str:
    """A uniquely named module holding ``source``, importable from ``folder``; its name."""
    name = f"user_code_{next(_COUNTER)}_{np.random.default_rng().integers(10**9)}"
    (folder / f"{name}.py").write_text(textwrap.dedent(source))
    monkeypatch.syspath_prepend(str(folder))
    monkeypatch.setenv("PYTHONPATH", f"{folder}")  # the runner's spawned workers import it too
    return name


def _pool(folder, rows: int = 40) -> str:
    """A small numeric pool: two features, a 0/1 label."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(rows, 2))
    y = (x[:, 0] > 0).astype(int)
    lines = ["a,b,label"] + [f"{u:.4f},{v:.4f},{label}" for (u, v), label in zip(x, y)]
    path = folder / "pool.csv"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


def _one_line(code, stdout, stderr):
    lines = stderr.strip().splitlines()
    assert code == 2 and stdout == "" and len(lines) == 1 and lines[0].startswith("error: "), (code, stdout, stderr)
    return lines[0]


def _mia(folder, train: str, *extra: str) -> list:
    return [
        "audit",
        "mia",
        "--data",
        _pool(folder),
        "--train",
        train,
        "--references",
        "4",
        "--workers",
        "1",
        "--output",
        folder / "out",
        "--no-history",
        *extra,
    ]


@pytest.mark.parametrize("kind", sorted(FAILURES))
def test_a_train_function_failing_on_the_probe_is_one_line(tmp_path, monkeypatch, kind):
    body, said = FAILURES[kind]
    module = _module(tmp_path, monkeypatch, f"def train(x_train, y_train, *, seed):\n    {body}\n")
    line = _one_line(*run_cli(_mia(tmp_path, f"{module}:train")))
    assert f"`--train` '{module}:train' {said}" in line
    assert "on a probe of 8 records" in line and "x_train is a float32 NumPy array of shape (8, 2)" in line
    assert not (tmp_path / "out").exists()


def test_the_probe_names_a_dataframes_columns(tmp_path, monkeypatch):
    module = _module(tmp_path, monkeypatch, "def train(x_train, y_train, *, seed):\n    return x_train['mean radius']\n")
    line = _one_line(*run_cli(_mia(tmp_path, f"{module}:train", "--train-input", "dataframe")))
    assert "raised KeyError: 'mean radius' on a probe of 8 records; x_train is a DataFrame of 8 rows with columns ['a', 'b']" in line


def test_verbose_adds_the_traceback_of_the_users_code(tmp_path, monkeypatch):
    module = _module(tmp_path, monkeypatch, "def train(x_train, y_train, *, seed):\n    return {}['mean radius']\n")
    code, stdout, stderr = run_cli(_mia(tmp_path, f"{module}:train", "--verbose"))
    assert code == 2 and "Traceback (most recent call last)" in stderr and f"{module}.py" in stderr
    assert stderr.strip().splitlines()[-1].startswith("error: `--train`")
    code, _, stderr = run_cli(["--verbose", *_mia(tmp_path, f"{module}:train")])  # the global flag, before the command
    assert code == 2 and "Traceback (most recent call last)" in stderr and stderr.strip().splitlines()[-1].startswith("error: `--train`")
    code, _, stderr = run_cli(_mia(tmp_path, f"{module}:train"))  # and without it, the one line
    assert code == 2 and "Traceback" not in stderr and len(stderr.strip().splitlines()) == 1


def test_a_module_that_raises_at_import_is_one_line(tmp_path, monkeypatch):
    module = _module(tmp_path, monkeypatch, "raise RuntimeError('no GPU here')\n")
    line = _one_line(*run_cli(_mia(tmp_path, f"{module}:train")))
    assert f"`--train` '{module}:train' raised RuntimeError: no GPU here while importing '{module}'" in line


def test_a_module_that_exits_at_import_is_one_line(tmp_path, monkeypatch):
    module = _module(tmp_path, monkeypatch, "import sys\nsys.exit(0)\n")
    line = _one_line(*run_cli(_mia(tmp_path, f"{module}:train")))
    assert f"`--train` '{module}:train' called sys.exit(0) while importing '{module}'" in line


def test_a_train_function_failing_only_in_the_workers_is_one_line(tmp_path, monkeypatch):
    """The probe (8 records) passes; the runner's workers (about 20 records each) raise."""
    module = _module(
        tmp_path,
        monkeypatch,
        TRAIN_OK
        + "\n_ok = train\ndef train(x_train, y_train, *, seed):\n    if len(x_train) > 8:\n        raise KeyError('mean radius')\n    return _ok(x_train, y_train, seed=seed)\n",
    )
    line = _one_line(*run_cli(_mia(tmp_path, f"{module}:train")))
    assert f"`--train` '{module}:train' raised KeyError: 'mean radius' in training run" in line


def test_sys_exit_in_a_worker_is_one_line(tmp_path, monkeypatch):
    module = _module(
        tmp_path,
        monkeypatch,
        TRAIN_OK
        + "\n_ok = train\ndef train(x_train, y_train, *, seed):\n    if len(x_train) > 8:\n        import sys\n        sys.exit(0)\n    return _ok(x_train, y_train, seed=seed)\n",
    )
    line = _one_line(*run_cli(_mia(tmp_path, f"{module}:train")))
    assert f"`--train` '{module}:train' called sys.exit(0)" in line and "in training run" in line


def test_os_exit_in_a_worker_is_an_error_naming_the_option(tmp_path, monkeypatch):
    """os._exit, looked up while --train runs, is caught in the worker and named with --train, not left to end the process without a word."""
    module = _module(
        tmp_path,
        monkeypatch,
        TRAIN_OK
        + "\n_ok = train\ndef train(x_train, y_train, *, seed):\n    if len(x_train) > 8:\n        import os\n        os._exit(0)\n    return _ok(x_train, y_train, seed=seed)\n",
    )
    line = _one_line(*run_cli(_mia(tmp_path, f"{module}:train")))
    assert line.startswith(f"error: `--train` '{module}:train' called os._exit(0) in training run ") and "it must return, not exit the process" in line


# -- --mechanism ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("import sys\n    sys.exit(0)", "called sys.exit(0)"),
        ("raise KeyError('sensitivity')", "raised KeyError: 'sensitivity'"),
        ("raise MemoryError()", "raised MemoryError"),
    ],
)
def test_a_mechanism_that_fails_or_exits_is_one_line(tmp_path, monkeypatch, body, said):
    module = _module(tmp_path, monkeypatch, f"def release(dataset, size, rng):\n    {body}\n")
    argv = [
        "audit",
        "mechanism",
        "--mechanism",
        f"{module}:release",
        "--epsilon",
        "1",
        "--relation",
        "add-remove",
        "--output",
        tmp_path / "out",
        "--no-history",
    ]
    line = _one_line(*run_cli(argv))
    assert line.startswith("error: `--mechanism`") and said in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        ("'0.5'", "got a str '0.5'"),
        ("np.array(['heads'] * size)", "got ndarray of category labels such as 'heads'"),
        ("['tails'] * size", "got list of category labels such as 'tails'"),
    ],
)
def test_a_mechanism_returning_text_is_told_what_is_expected(tmp_path, monkeypatch, returned, said):
    module = _module(tmp_path, monkeypatch, f"import numpy as np\ndef release(dataset, size, rng):\n    return {returned}\n")
    argv = [
        "audit",
        "mechanism",
        "--mechanism",
        f"{module}:release",
        "--epsilon",
        "1",
        "--relation",
        "add-remove",
        "--output",
        tmp_path / "out",
        "--no-history",
    ]
    line = _one_line(*run_cli(argv))
    assert "`--mechanism` must return an array of `size` = 2 numeric outputs" in line and said in line


# -- a model factory and --synthetic-train ---------------------------------------------------------


def test_a_factory_that_exits_is_one_line(tmp_path, monkeypatch):
    pytest.importorskip("torch")
    from privaudit.models.loading import build_torch_module

    module = _module(tmp_path, monkeypatch, "import sys\ndef build():\n    sys.exit(0)\n")
    with pytest.raises(ValueError, match=rf"`--factory` '{module}:build' called sys.exit\(0\) when called with no arguments"):
        build_torch_module(f"{module}:build", factory_name="--factory")


def test_a_synthetic_train_that_exits_is_an_error(tmp_path, monkeypatch):
    from privaudit.audits.synthetic_text import audit as synthetic_text
    from privaudit.canaries.lm_provenance import LMProvenance

    module = _module(tmp_path, monkeypatch, "import sys\ndef train(texts, *, seed):\n    sys.exit(0)\n")
    record = LMProvenance(
        design="prefix-suffix",
        span="secret",
        prefixes=("a b ",),
        secrets=("w1",),
        included=(True,),
        seed=0,
        inclusion_seed=0,
        tokenizer={"vocab_size": 1, "vocab_sha256": "0" * 64},
    )
    with pytest.raises(ValueError, match=rf"`--synthetic-train` '{module}:train' called sys.exit\(0\)"):
        synthetic_text.canary_signals(record, ["a b w1"], signal="model", n=2, train=f"{module}:train")


# -- a log (stderr not a terminal): long stages print when they started and their elapsed time -------


def test_a_long_stage_prints_its_start_and_elapsed_time_in_a_captured_run(monkeypatch, capsys):
    import time

    from privaudit.cli import options

    monkeypatch.setenv(options.STAGE_DELAY_ENV, "0.2")
    with options.progress_bars() as report:  # pytest captures stderr: not a terminal
        report("a quick stage")
        report("training models", 0, 4)
        time.sleep(0.6)
        report("training models", 1, 4)  # the same stage: no new line
        report("writing results.json")
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "stage: training models: started 0 s ago"
    assert lines[1].startswith("stage: training models: done in ") and 0.5 <= float(lines[1].split()[-2]) < 30
    assert len(lines) == 2, lines  # the quick stages print nothing


def test_a_refusal_inside_a_stage_stays_one_line(monkeypatch, capsys):
    from privaudit.cli import options

    with pytest.raises(ValueError), options.progress_bars() as report:
        report("reading the data")
        raise ValueError("refused")
    assert capsys.readouterr().err == ""
